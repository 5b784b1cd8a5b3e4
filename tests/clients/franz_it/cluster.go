// tests/clients/franz_it/cluster.go: franz-go's driver for
// tests/integration/test_cluster_clients.py (issue #12), run as
//
//	franz-it cluster produce BOOTSTRAP TOPIC N CHUNK
//	franz-it cluster consume BOOTSTRAP TOPIC GROUP FIRST HALF
//
// The line protocol is described in test_cluster_clients.py. The producer is
// franz-go's default, idempotent, with acks=all, records to explicit
// partitions, ProduceSync per chunk (franz-go retries through a leader change
// until the delivery timeout). The group members use franz-go's consumer
// group with auto commit off (4 KiB a partition per fetch, so member 1 stops
// inside partitions) and CommitOffsetsSync of exactly what they delivered.
// Single goroutine apart from franz-go's own; every wait is bounded.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// say writes one protocol line, unbuffered (fail exits at once).
func say(format string, a ...any) {
	fmt.Printf(format+"\n", a...)
}

func franzVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("not a number: %q", s)
	}
	return n
}

func runCluster(args []string) {
	say("client franz-go %s idempotent=1", franzVersion())
	switch {
	case len(args) == 5 && args[0] == "produce":
		clusterProduce(strings.Split(args[1], ","), args[2], atoi(args[3]), atoi(args[4]))
	case len(args) == 6 && args[0] == "consume":
		clusterConsume(strings.Split(args[1], ","), args[2], args[3], atoi(args[4]), atoi(args[5]))
	default:
		fail("usage: cluster produce BOOTSTRAP TOPIC N CHUNK | cluster consume BOOTSTRAP TOPIC GROUP FIRST HALF")
	}
}

func clusterProduce(seeds []string, topic string, n, chunk int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("ck-cc-franz"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(120*time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		fail("NewClient: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	acked, failed := 0, 0
	for start := 0; start < n; start += chunk {
		var recs []*kgo.Record
		for i := start; i < n && i < start+chunk; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3),
				Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%06d", i))})
		}
		// ProduceSync's results come in completion order: the key names the record.
		for _, r := range cl.ProduceSync(ctx, recs...) {
			i := atoi(strings.TrimPrefix(string(r.Record.Key), "k"))
			if r.Err != nil {
				say("err %d %v", i, r.Err)
				failed++
				continue
			}
			say("ack %d %d %d", r.Record.Partition, r.Record.Offset, i)
			acked++
		}
	}
	say("produced %d %d", acked, failed)
}

// commitSync commits delivered (next offsets), retrying retriable errors and
// lost connections while the coordinator moves (60 s at most), and prints them.
func commitSync(cl *kgo.Client, topic string, delivered map[int32]int64) {
	commit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range delivered {
		commit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var cerr error
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cl.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
							cerr = e
						}
					}
				}
			}
		})
		cancel()
		if cerr == nil {
			break
		}
		// Kafka's non-retriable codes fail; a retriable code or a lost
		// connection (the coordinator killed under the commit: franz-go
		// answers "the broker connection has died") is retried, as an
		// application would, until the deadline.
		var ke *kerr.Error
		if time.Now().After(deadline) || (errors.As(cerr, &ke) && !ke.Retriable) {
			fail("commit %v: %v", commit, cerr)
		}
		say("note commit: %v, retrying", cerr)
		time.Sleep(200 * time.Millisecond)
	}
	parts := make([]int, 0, len(delivered))
	for p := range delivered {
		parts = append(parts, int(p))
	}
	sort.Ints(parts)
	for _, p := range parts {
		say("committed %d %d", p, delivered[int32(p)])
	}
}

func waitLine(in *bufio.Reader, want string) []string {
	line, err := in.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 1 || f[0] != want {
		fail("expected `%s`, got %q (%v)", want, line, err)
	}
	return f[1:]
}

// member runs one group member until done(next, count) holds after a poll,
// printing each record it delivers; once pauseAt(count) holds (if given), it
// commits what it delivered, prints `paused` and waits for `resume`. At the
// end it commits what it delivered and leaves the group. Returns the next
// offsets of what it delivered.
func member(seeds []string, topic, group string, in *bufio.Reader, done func(map[int32]int64, int) bool,
	pauseAt func(int) bool) map[int32]int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("ck-cc-franz"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(4096), kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		fail("NewClient: %v", err)
	}
	next := map[int32]int64{}
	count := 0
	paused := false
	deadline := time.Now().Add(90 * time.Second)
	for !done(next, count) {
		if time.Now().After(deadline) {
			fail("member of %s: delivered %d records in 90 s (next offsets %v)", group, count, next)
		}
		pctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				say("note fetch %s/%d: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			say("rec %d %d %s", r.Partition, r.Offset, r.Value)
			next[r.Partition] = r.Offset + 1
			count++
		})
		if !paused && pauseAt != nil && pauseAt(count) {
			paused = true
			commitSync(cl, topic, next)
			say("paused")
			waitLine(in, "resume")
		}
	}
	commitSync(cl, topic, next)
	cl.Close() // leaves the group
	return next
}

func clusterConsume(seeds []string, topic, group string, first, half int) {
	in := bufio.NewReader(os.Stdin)
	mine := member(seeds, topic, group, in, func(_ map[int32]int64, count int) bool { return count >= half },
		func(count int) bool { return count >= first })
	say("closed")
	ends := map[int32]int64{}
	for p, e := range waitLine(in, "go") {
		ends[int32(p)] = int64(atoi(e))
	}
	say("member2")
	member(seeds, topic, group, in, func(n map[int32]int64, _ int) bool {
		for p, e := range ends {
			o, ok := n[p]
			if !ok {
				o = mine[p]
			}
			if o < e {
				return false
			}
		}
		return true
	}, nil)
	say("done")
}
