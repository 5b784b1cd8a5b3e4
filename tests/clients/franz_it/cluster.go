// tests/clients/franz_it/cluster.go: franz-go's driver for
// tests/integration/test_cluster_clients.py (issue #12), run as
//
//	franz-it cluster produce BOOTSTRAP TOPIC N CHUNK
//	franz-it cluster consume BOOTSTRAP TOPIC GROUP HALF
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
	case len(args) == 5 && args[0] == "consume":
		clusterConsume(strings.Split(args[1], ","), args[2], args[3], atoi(args[4]))
	default:
		fail("usage: cluster produce BOOTSTRAP TOPIC N CHUNK | cluster consume BOOTSTRAP TOPIC GROUP HALF")
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

// member runs one group member until done(next, count) holds after a poll;
// prints each record it delivers, commits the next offsets of what it
// delivered, prints them and leaves the group. Returns the next offsets.
func member(seeds []string, topic, group string, start map[int32]int64, done func(map[int32]int64, int) bool) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("ck-cc-franz"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(4096), kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		fail("NewClient: %v", err)
	}
	next := map[int32]int64{}
	for p, o := range start {
		next[p] = o
	}
	delivered := map[int32]int64{}
	count := 0
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
			delivered[r.Partition] = r.Offset + 1
			count++
		})
	}
	commit := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range delivered {
		commit[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	cdeadline := time.Now().Add(60 * time.Second)
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
		if time.Now().After(cdeadline) || !kerr.IsRetriable(cerr) {
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
	cl.Close() // leaves the group
	for p, o := range next {
		start[p] = o
	}
}

func clusterConsume(seeds []string, topic, group string, half int) {
	next := map[int32]int64{}
	member(seeds, topic, group, next, func(_ map[int32]int64, count int) bool { return count >= half })
	say("closed")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) < 1 || f[0] != "go" {
		fail("expected `go`, got %q (%v)", line, err)
	}
	ends := map[int32]int64{}
	for p, e := range f[1:] {
		ends[int32(p)] = int64(atoi(e))
	}
	say("member2")
	member(seeds, topic, group, next, func(n map[int32]int64, _ int) bool {
		for p, e := range ends {
			if n[p] < e {
				return false
			}
		}
		return true
	})
	say("done")
}
