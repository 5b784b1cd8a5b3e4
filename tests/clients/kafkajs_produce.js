// tests/clients/kafkajs_produce.js: kafkajs 2.2.4 producer for golden capture.
//
// Usage: node kafkajs_produce.js PORT TOPIC CODEC   (CODEC: none|gzip)
// Sends the records of golden_messages.py's rule: key-<i>, value-<i>- plus
// "abcdefgh" x8, headers client=kafkajs and trace=golden.
'use strict';
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const [port, topic, codec] = process.argv.slice(2);
const COUNT = 3;
const kafka = new Kafka({
  clientId: 'kafkajs-golden',
  brokers: ['127.0.0.1:' + port],
  logLevel: logLevel.WARN,
  retry: { retries: 2 },
});

async function main() {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < COUNT; i++) {
    messages.push({
      key: 'key-' + i,
      value: 'value-' + i + '-' + 'abcdefgh'.repeat(8),
      partition: 0,
      headers: { client: 'kafkajs', trace: 'golden' },
    });
  }
  await producer.send({
    topic,
    acks: 1,
    compression: codec === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
    messages,
  });
  await producer.disconnect();
}

main().catch((e) => { console.error(e); process.exit(1); });
