// tests/clients/sarama_it/main.go: sarama 1.22.1 integration client (tests/integration/test_sarama.py).
//
// Usage: sarama-it -broker 127.0.0.1:PORT -topic T -version v2_2|v0_10_2 -codec none|gzip|snappy|lz4|zstd -n N
//
// A SyncProducer with RequiredAcks=WaitForAll sends N keyed messages to
// partitions 0 and 1 (manual partitioner; the topic is auto-created by
// Metadata), in batches of 50 through SendMessages, and records the offset
// of each. A Consumer's PartitionConsumer from OffsetOldest then reads each
// partition and every message must match (offset, key, value, and headers
// when the version has them). sarama does not negotiate versions: v0_10_2
// (V0_10_2_0) sends Produce v2 with message format v1 (magic 1) and Fetch v3,
// Metadata v1; v2_2 (V2_2_0_0) sends Produce v7 / Fetch v10 with record
// batches v2. Exit 0 when all matched.
//
// Build (offline, Debian's sources): GOPATH=/usr/share/gocode GO111MODULE=off go build -o OUT .
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/Shopify/sarama"
)

type sent struct {
	key, value string
	offset     int64
}

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	broker := flag.String("broker", "", "host:port")
	topic := flag.String("topic", "sarama-it", "topic")
	version := flag.String("version", "v2_2", "v2_2 or v0_10_2")
	codec := flag.String("codec", "none", "none|gzip|snappy|lz4|zstd")
	n := flag.Int("n", 400, "messages")
	flag.Parse()

	config := sarama.NewConfig()
	config.ClientID = "ck-it-sarama"
	switch *version {
	case "v2_2":
		config.Version = sarama.V2_2_0_0
	case "v0_10_2":
		config.Version = sarama.V0_10_2_0
	default:
		die("unknown -version %q", *version)
	}
	headers := config.Version.IsAtLeast(sarama.V0_11_0_0)
	config.Producer.Return.Successes = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Partitioner = sarama.NewManualPartitioner
	config.Producer.Retry.Max = 3
	config.Metadata.Retry.Max = 10
	config.Metadata.Retry.Backoff = 200 * time.Millisecond
	config.Net.DialTimeout = 5 * time.Second
	config.Net.ReadTimeout = 15 * time.Second
	config.Consumer.Return.Errors = true
	config.Consumer.MaxWaitTime = 200 * time.Millisecond
	codecs := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
		"zstd": sarama.CompressionZSTD,
	}
	c, ok := codecs[*codec]
	if !ok {
		die("unknown -codec %q", *codec)
	}
	config.Producer.Compression = c
	addrs := strings.Split(*broker, ",")

	producer, err := sarama.NewSyncProducer(addrs, config)
	if err != nil {
		die("NewSyncProducer: %v", err)
	}
	want := map[int32][]sent{}
	for start := 0; start < *n; start += 50 {
		var msgs []*sarama.ProducerMessage
		for i := start; i < start+50 && i < *n; i++ {
			m := &sarama.ProducerMessage{
				Topic:     *topic,
				Partition: int32(i % 2),
				Key:       sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
				Value:     sarama.StringEncoder(fmt.Sprintf("value-%d-", i) + strings.Repeat("q", i%31)),
			}
			if headers {
				m.Headers = []sarama.RecordHeader{{Key: []byte("idx"), Value: []byte(fmt.Sprint(i))}}
			}
			msgs = append(msgs, m)
		}
		if err := producer.SendMessages(msgs); err != nil {
			if pe, ok := err.(sarama.ProducerErrors); ok && len(pe) > 0 {
				die("SendMessages: %d errors, first: %v", len(pe), pe[0].Err)
			}
			die("SendMessages: %v", err)
		}
		for _, m := range msgs {
			k, _ := m.Key.Encode()
			v, _ := m.Value.Encode()
			want[m.Partition] = append(want[m.Partition], sent{string(k), string(v), m.Offset})
		}
	}
	if err := producer.Close(); err != nil {
		die("producer close: %v", err)
	}
	for p, ms := range want {
		for i, m := range ms {
			if m.offset != int64(i) {
				die("partition %d: message %d acknowledged at offset %d", p, i, m.offset)
			}
		}
	}
	fmt.Printf("produced %d messages (WaitForAll, %s, %s)\n", *n, *version, *codec)

	consumer, err := sarama.NewConsumer(addrs, config)
	if err != nil {
		die("NewConsumer: %v", err)
	}
	for p := int32(0); p < 2; p++ {
		pc, err := consumer.ConsumePartition(*topic, p, sarama.OffsetOldest)
		if err != nil {
			die("ConsumePartition %d: %v", p, err)
		}
		deadline := time.After(30 * time.Second)
		for i, w := range want[p] {
			select {
			case m := <-pc.Messages():
				if m.Offset != w.offset || string(m.Key) != w.key || string(m.Value) != w.value {
					die("partition %d #%d: got offset %d key %q value %q; want offset %d key %q value %q",
						p, i, m.Offset, m.Key, m.Value, w.offset, w.key, w.value)
				}
				if headers {
					if len(m.Headers) != 1 || string(m.Headers[0].Key) != "idx" {
						die("partition %d offset %d: headers %v", p, m.Offset, m.Headers)
					}
				}
			case e := <-pc.Errors():
				die("partition %d consumer error: %v", p, e)
			case <-deadline:
				die("partition %d: timed out after %d of %d messages", p, i, len(want[p]))
			}
		}
		if hwm := pc.HighWaterMarkOffset(); hwm != int64(len(want[p])) {
			die("partition %d: high water mark %d, want %d", p, hwm, len(want[p]))
		}
		pc.Close()
	}
	consumer.Close()
	fmt.Println("consumed everything back")
}
