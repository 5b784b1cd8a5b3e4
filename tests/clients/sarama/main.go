// tests/clients/sarama/main.go: sarama 1.22.1 SyncProducer for golden capture.
//
// Usage: sarama-golden -broker 127.0.0.1:PORT -topic T -version v2_2|default -codec none|gzip|snappy|lz4|zstd
//
// sarama does not negotiate versions: it sends the request versions of the
// Kafka release in config.Version. "default" keeps sarama's default
// (V0_8_2_0: Metadata v0, Produce v0, magic-0 messages, no headers);
// "v2_2" sets V2_2_0_0 (Produce v7, record batches with headers).
// The records follow golden_messages.py's rule.
//
// Build (offline, Debian's sources): GOPATH=/usr/share/gocode GO111MODULE=off go build -o DIR/sarama-golden .
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/Shopify/sarama"
)

func main() {
	broker := flag.String("broker", "", "host:port")
	topic := flag.String("topic", "golden", "topic")
	version := flag.String("version", "v2_2", "v2_2 or default")
	codec := flag.String("codec", "none", "none|gzip|snappy|lz4|zstd")
	flag.Parse()

	config := sarama.NewConfig()
	config.ClientID = "sarama-golden"
	if *version == "v2_2" {
		config.Version = sarama.V2_2_0_0
	}
	config.Producer.Return.Successes = true
	config.Producer.RequiredAcks = sarama.WaitForLocal
	config.Producer.Partitioner = sarama.NewManualPartitioner
	config.Producer.Retry.Max = 1
	config.Metadata.Retry.Max = 1
	codecs := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
		"zstd": sarama.CompressionZSTD,
	}
	config.Producer.Compression = codecs[*codec]

	producer, err := sarama.NewSyncProducer(strings.Split(*broker, ","), config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new producer:", err)
		os.Exit(1)
	}
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 3; i++ {
		m := &sarama.ProducerMessage{
			Topic:     *topic,
			Partition: 0,
			Key:       sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("value-%d-", i) + strings.Repeat("abcdefgh", 8)),
		}
		if *version != "default" {
			m.Headers = []sarama.RecordHeader{
				{Key: []byte("client"), Value: []byte("sarama")},
				{Key: []byte("trace"), Value: []byte("golden")},
			}
		}
		msgs = append(msgs, m)
	}
	if err := producer.SendMessages(msgs); err != nil {
		fmt.Fprintln(os.Stderr, "send:", err)
		os.Exit(1)
	}
	producer.Close()
}
