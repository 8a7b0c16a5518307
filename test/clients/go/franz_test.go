// franz-go (kgo, kadm) against the broker at $KAFKA_BOOTSTRAP (default 127.0.0.1:9092).
// Consumers read with ConsumePartitions (direct assignment, no group). Tests that need consumer
// groups run unless KAFKA_TEST_GROUPS=0; those that need transactions only with KAFKA_TEST_TXN=1.
package clienttests

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	bootstrap = envOr("KAFKA_BOOTSTRAP", "127.0.0.1:9092")
	runID     = envOr("KAFKA_TEST_RUN_ID", fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffff))
	counter   atomic.Int64
)

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func needs(t *testing.T, tag string) {
	env := map[string]string{"groups": "KAFKA_TEST_GROUPS", "txn": "KAFKA_TEST_TXN"}[tag]
	v := os.Getenv(env)
	if v == "" && tag == "groups" {
		v = "1"
	}
	if v != "1" {
		t.Skipf("needs %s; %s=1 runs it", tag, env)
	}
}

func topicName(prefix string) string {
	return fmt.Sprintf("%s-%s-%d", prefix, runID, counter.Add(1))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.RequestTimeoutOverhead(20 * time.Second),
		kgo.RetryTimeout(30 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func admin(t *testing.T) *kadm.Client {
	return kadm.NewClient(client(t))
}

func createTopic(t *testing.T, name string, partitions int32, configs map[string]*string) string {
	t.Helper()
	ctx := ctxT(t)
	adm := admin(t)
	res, err := adm.CreateTopics(ctx, partitions, 1, configs, name)
	if err != nil {
		t.Fatalf("CreateTopics(%s): %v", name, err)
	}
	if r := res[name]; r.Err != nil {
		t.Fatalf("CreateTopics(%s): %v (%s)", name, r.Err, r.ErrMessage)
	}
	waitUntil(t, "metadata of "+name, func() (bool, string) {
		td, err := adm.ListTopics(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		d := td[name]
		return d.Err == nil && len(d.Partitions) == int(partitions), fmt.Sprintf("%v %d partitions", d.Err, len(d.Partitions))
	})
	return name
}

func waitUntil(t *testing.T, what string, fn func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, last := fn()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func str(s string) *string { return &s }

// consume reads partitions from the given offsets until it has count records (and nothing more
// arrives within a short wait).
func consume(t *testing.T, topic string, offsets map[int32]kgo.Offset, count int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := client(t, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(300 * time.Millisecond)}, opts...)...)
	var out []*kgo.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < count && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("fetch error on %s[%d]: %v", tp, p, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	if len(out) != count {
		t.Fatalf("consumed %d records, want %d", len(out), count)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	extra := cl.PollFetches(ctx).Records()
	cancel()
	if len(extra) > 0 {
		t.Fatalf("%d records beyond the expected %d (first at offset %d)", len(extra), count, extra[0].Offset)
	}
	return out
}

func view(r *kgo.Record) string {
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, fmt.Sprintf("%s=%q", h.Key, h.Value))
	}
	key := "<nil>"
	if r.Key != nil {
		key = fmt.Sprintf("%q", r.Key)
	}
	val := "<nil>"
	if r.Value != nil {
		val = fmt.Sprintf("%q", r.Value)
	}
	return fmt.Sprintf("p%d@%d key=%s value=%s headers=[%s]", r.Partition, r.Offset, key, val, strings.Join(hs, ","))
}

func produceSync(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx := ctxT(t)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("ProduceSync: %v", err)
	}
}

// --- admin ------------------------------------------------------------------------------------

func TestKadmCreateListDeleteTopics(t *testing.T) {
	ctx := ctxT(t)
	adm := admin(t)
	t1, t2 := topicName("go-admin"), topicName("go-admin")
	res, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": str("7200000")}, t1, t2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create %s: %v %s", r.Topic, r.Err, r.ErrMessage)
		}
		if r.NumPartitions != 3 || r.ReplicationFactor != 1 {
			t.Errorf("create %s: %d partitions, replication %d", r.Topic, r.NumPartitions, r.ReplicationFactor)
		}
	}
	waitUntil(t, "topics listed", func() (bool, string) {
		td, err := adm.ListTopics(ctx, t1, t2)
		if err != nil {
			return false, err.Error()
		}
		return len(td[t1].Partitions) == 3 && len(td[t2].Partitions) == 3, fmt.Sprint(td)
	})
	td, _ := adm.ListTopics(ctx, t1)
	for _, p := range td[t1].Partitions.Sorted() {
		if p.Err != nil || len(p.Replicas) != 1 || p.Replicas[0] != p.Leader || len(p.ISR) != 1 {
			t.Errorf("partition %d: leader %d replicas %v isr %v err %v", p.Partition, p.Leader, p.Replicas, p.ISR, p.Err)
		}
	}
	if td[t1].ID == [16]byte{} {
		t.Errorf("topic %s has a zero topic id", t1)
	}
	res, err = adm.CreateTopics(ctx, 1, 1, nil, t1)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[t1].Err, kerr.TopicAlreadyExists) {
		t.Errorf("creating again: %v, want TOPIC_ALREADY_EXISTS", res[t1].Err)
	}
	dres, err := adm.DeleteTopics(ctx, t1, t2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range dres {
		if r.Err != nil {
			t.Errorf("delete %s: %v", r.Topic, r.Err)
		}
	}
	waitUntil(t, "topics gone", func() (bool, string) {
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return false, err.Error()
		}
		return !td.Has(t1) && !td.Has(t2), "still listed"
	})
	dres, err = adm.DeleteTopics(ctx, t1)
	if err == nil {
		err = dres[t1].Err
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting again: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

func TestKadmCreatePartitions(t *testing.T) {
	ctx := ctxT(t)
	adm := admin(t)
	topic := createTopic(t, topicName("go-parts"), 1, nil)
	res, err := adm.UpdatePartitions(ctx, 4, topic)
	if err != nil {
		t.Fatal(err)
	}
	if res[topic].Err != nil {
		t.Fatalf("UpdatePartitions: %v %s", res[topic].Err, res[topic].ErrMessage)
	}
	waitUntil(t, "4 partitions", func() (bool, string) {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		return len(td[topic].Partitions) == 4, fmt.Sprint(len(td[topic].Partitions))
	})
	cl := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, []*kgo.Record{{Topic: topic, Partition: 3, Value: []byte("p3")}})
	got := consume(t, topic, map[int32]kgo.Offset{3: kgo.NewOffset().AtStart()}, 1)
	if v := view(got[0]); v != `p3@0 key=<nil> value="p3" headers=[]` {
		t.Errorf("got %s", v)
	}
	res, err = adm.UpdatePartitions(ctx, 2, topic)
	if err == nil {
		err = res[topic].Err
	}
	if !errors.Is(err, kerr.InvalidPartitions) {
		t.Errorf("shrinking: %v, want INVALID_PARTITIONS", err)
	}
}

func TestKadmDescribeAlterConfigs(t *testing.T) {
	ctx := ctxT(t)
	adm := admin(t)
	topic := createTopic(t, topicName("go-cfg"), 1, map[string]*string{"retention.ms": str("3600000")})
	get := func() map[string]kadm.Config {
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("DescribeTopicConfigs: %v %v", err, rc.Err)
		}
		m := map[string]kadm.Config{}
		for _, c := range rc.Configs {
			m[c.Key] = c
		}
		return m
	}
	c := get()
	if v := val(c["retention.ms"]); v != "3600000" {
		t.Errorf("retention.ms = %q", v)
	}
	if c["retention.ms"].Source != 1 { // DYNAMIC_TOPIC_CONFIG
		t.Errorf("retention.ms source = %v", c["retention.ms"].Source)
	}
	if v := val(c["cleanup.policy"]); v != "delete" {
		t.Errorf("cleanup.policy = %q", v)
	}
	// IncrementalAlterConfigs
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: str("86400000")},
		{Name: "max.message.bytes", Value: str("2000000")}}, topic)
	if err != nil || ar[0].Err != nil {
		t.Fatalf("AlterTopicConfigs: %v %v", err, ar)
	}
	c = get()
	if val(c["retention.ms"]) != "86400000" || val(c["max.message.bytes"]) != "2000000" {
		t.Errorf("after incremental alter: retention.ms=%q max.message.bytes=%q", val(c["retention.ms"]), val(c["max.message.bytes"]))
	}
	// incremental delete restores the default
	ar, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, topic)
	if err != nil || ar[0].Err != nil {
		t.Fatalf("AlterTopicConfigs delete: %v %v", err, ar)
	}
	if c = get(); c["max.message.bytes"].Source == 1 {
		t.Errorf("max.message.bytes still a topic override after delete: %q", val(c["max.message.bytes"]))
	}
	// AlterConfigs (the non-incremental API replaces all overrides)
	ar, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: str("1234567")}}, topic)
	if err != nil || ar[0].Err != nil {
		t.Fatalf("AlterTopicConfigsState: %v %v", err, ar)
	}
	if c = get(); val(c["retention.ms"]) != "1234567" {
		t.Errorf("after AlterConfigs: retention.ms=%q", val(c["retention.ms"]))
	}
}

func TestKadmMetadataAndApiVersions(t *testing.T) {
	ctx := ctxT(t)
	adm := admin(t)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range md.Brokers {
		if fmt.Sprintf("%s:%d", b.Host, b.Port) == bootstrap {
			found = true
		}
	}
	if !found {
		t.Errorf("no broker at %s in %v", bootstrap, md.Brokers)
	}
	if md.Controller < 0 {
		t.Errorf("controller %d", md.Controller)
	}
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatalf("ApiVersions from %d: %v", v.NodeID, v.Err)
		}
		for _, k := range []int16{0, 1, 2, 3, 18, 19, 20, 22} { // Produce Fetch ListOffsets Metadata ApiVersions CreateTopics DeleteTopics InitProducerId
			if _, _, ok := v.KeyVersions(k); !ok {
				t.Errorf("broker %d does not advertise API key %d", v.NodeID, k)
			}
		}
	}
	// DescribeCluster (kadm uses it when the broker supports it)
	cl := client(t)
	req := kmsg.NewPtrDescribeClusterRequest()
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Errorf("DescribeCluster: %v %v", err, resp)
	} else if resp.ClusterID == "" || len(resp.Brokers) == 0 {
		t.Errorf("DescribeCluster: cluster id %q, %d brokers", resp.ClusterID, len(resp.Brokers))
	}
}

// --- produce / consume ------------------------------------------------------------------------

var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

func TestProduceConsume(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := createTopic(t, topicName("go-"+c.name), 1, nil)
			cl := client(t, kgo.ProducerBatchCompression(c.codec), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(5*time.Millisecond))
			var recs []*kgo.Record
			for i := 0; i < 150; i++ {
				r := &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte(fmt.Sprintf("value-%d-", i)), i%6+1)}
				if i%3 != 0 {
					r.Key = []byte(fmt.Sprintf("key-%d", i))
				}
				if i%4 == 0 {
					r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}, {Key: "empty", Value: []byte{}}, {Key: "h", Value: []byte("dup")}}
				}
				recs = append(recs, r)
			}
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("tombstone")}, &kgo.Record{Topic: topic, Key: []byte{}, Value: []byte{}})
			var want []string
			produceSync(t, cl, recs)
			for i, r := range recs {
				if r.Offset != int64(i) || r.Partition != 0 {
					t.Fatalf("record %d produced at p%d@%d", i, r.Partition, r.Offset)
				}
				want = append(want, view(r))
			}
			got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, len(recs))
			now := time.Now()
			for i, r := range got {
				if v := view(r); v != want[i] {
					t.Fatalf("record %d:\n got  %s\n want %s", i, v, want[i])
				}
				if r.Attrs.TimestampType() != 0 || now.Sub(r.Timestamp) > 2*time.Minute || r.Timestamp.After(now.Add(time.Second)) {
					t.Errorf("record %d: timestamp %v type %d", i, r.Timestamp, r.Attrs.TimestampType())
				}
			}
			// read_committed sees the same (no transactions here)
			got = consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(140)}, len(recs)-140,
				kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			for i, r := range got {
				if v := view(r); v != want[140+i] {
					t.Fatalf("read_committed record %d:\n got  %s\n want %s", 140+i, v, want[140+i])
				}
			}
		})
	}
}

func TestConsumeFromOffsets(t *testing.T) {
	topic := createTopic(t, topicName("go-offsets"), 2, nil)
	cl := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("a%d", i))})
	}
	produceSync(t, cl, recs)
	recs = nil
	for i := 10; i < 15; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("b%d", i))})
	}
	recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("other")})
	produceSync(t, cl, recs)
	check := func(got []*kgo.Record, from int) {
		t.Helper()
		for i, r := range got {
			o := from + i
			want := fmt.Sprintf("a%d", o)
			if o >= 10 {
				want = fmt.Sprintf("b%d", o)
			}
			if r.Offset != int64(o) || string(r.Value) != want {
				t.Fatalf("got %s, want offset %d value %s", view(r), o, want)
			}
		}
	}
	check(consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(7)}, 8), 7)
	check(consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(12)}, 3), 12)
	check(consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtEnd().Relative(-2)}, 2), 13)
	got := consume(t, topic, map[int32]kgo.Offset{1: kgo.NewOffset().AtStart()}, 1)
	if v := view(got[0]); v != `p1@0 key=<nil> value="other" headers=[]` {
		t.Errorf("partition 1: %s", v)
	}
}

func TestListOffsetsByTimestamp(t *testing.T) {
	ctx := ctxT(t)
	adm := admin(t)
	topic := createTopic(t, topicName("go-times"), 2, nil)
	base := time.UnixMilli(1_600_000_000_000)
	cl := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 5; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	produceSync(t, cl, recs)
	lo := func(name string, l kadm.ListedOffsets, err error, want0, want1 int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e := l.Error(); e != nil {
			t.Fatalf("%s: %v", name, e)
		}
		got0, _ := l.Lookup(topic, 0)
		got1, _ := l.Lookup(topic, 1)
		if got0.Offset != want0 || got1.Offset != want1 {
			t.Errorf("%s: offsets %d/%d, want %d/%d", name, got0.Offset, got1.Offset, want0, want1)
		}
	}
	l, err := adm.ListStartOffsets(ctx, topic)
	lo("start", l, err, 0, 0)
	l, err = adm.ListEndOffsets(ctx, topic)
	lo("end", l, err, 5, 5)
	l, err = adm.ListOffsetsAfterMilli(ctx, base.UnixMilli()+2500, topic)
	lo("after base+2.5s", l, err, 3, 3)
	l, err = adm.ListOffsetsAfterMilli(ctx, base.UnixMilli(), topic)
	lo("after base", l, err, 0, 0)
	l, err = adm.ListOffsetsAfterMilli(ctx, base.UnixMilli()+100_000, topic)
	lo("after the last", l, err, 5, 5) // kadm maps -1 to the end offset
	if o, _ := l.Lookup(topic, 0); o.Timestamp != -1 {
		t.Errorf("past the last record: timestamp %d, want -1", o.Timestamp)
	}
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AfterMilli(base.UnixMilli() + 3000)}, 2)
	if got[0].Offset != 3 || !got[0].Timestamp.Equal(base.Add(3*time.Second)) {
		t.Errorf("consume after milli: %s at %v", view(got[0]), got[0].Timestamp)
	}
}

func TestDeleteRecords(t *testing.T) {
	ctx := ctxT(t)
	adm := admin(t)
	topic := createTopic(t, topicName("go-delrec"), 1, nil)
	cl := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	produceSync(t, cl, recs)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	res, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := res.Lookup(topic, 0)
	if !ok || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	l, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := l.Lookup(topic, 0); o.Offset != 4 {
		t.Errorf("start offset %d after delete, want 4", o.Offset)
	}
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, 6)
	if got[0].Offset != 4 || string(got[0].Value) != "4" {
		t.Errorf("first record after delete: %s", view(got[0]))
	}
	// deleting beyond the high watermark fails
	var bad kadm.Offsets
	bad.Add(kadm.Offset{Topic: topic, Partition: 0, At: 11})
	res, err = adm.DeleteRecords(ctx, bad)
	if err == nil {
		r, _ = res.Lookup(topic, 0)
		err = r.Err
	}
	if !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("delete beyond the end: %v, want OFFSET_OUT_OF_RANGE", err)
	}
}

func TestProducerModes(t *testing.T) {
	topic := createTopic(t, topicName("go-modes"), 1, nil)
	// franz-go is idempotent by default (InitProducerId); also without idempotence and with acks=1
	idem := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	plain := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	var n int
	for round := 0; round < 3; round++ {
		for _, cl := range []*kgo.Client{idem, plain} {
			var recs []*kgo.Record
			for i := 0; i < 20; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(n))})
				n++
			}
			produceSync(t, cl, recs)
			for i, r := range recs {
				if r.Offset != int64(n-20+i) {
					t.Fatalf("record %d at offset %d", n-20+i, r.Offset)
				}
			}
		}
	}
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, n)
	for i, r := range got {
		if string(r.Value) != fmt.Sprint(i) {
			t.Fatalf("offset %d: %s", i, view(r))
		}
	}
}

func TestLargeRecord(t *testing.T) {
	topic := createTopic(t, topicName("go-large"), 1, nil)
	big := make([]byte, 700_000)
	rand.Read(big)
	cl := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, []*kgo.Record{{Topic: topic, Value: []byte("s")}, {Topic: topic, Value: big}, {Topic: topic, Value: []byte("after")}})
	// fetch limits below the record size: the broker still returns it (KIP-74)
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().At(1)}, 2, kgo.FetchMaxBytes(65536), kgo.FetchMaxPartitionBytes(65536))
	if !bytes.Equal(got[0].Value, big) || string(got[1].Value) != "after" {
		t.Errorf("large record differs (%d bytes back)", len(got[0].Value))
	}
}

func TestKeyedPartitioning(t *testing.T) {
	topic := createTopic(t, topicName("go-keyed"), 3, nil)
	cl := client(t, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("user-%d", i%6)), Value: []byte(fmt.Sprint(i))})
	}
	produceSync(t, cl, recs)
	where := map[string]int32{}
	var want []string
	for _, r := range recs {
		if p, ok := where[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		where[string(r.Key)] = r.Partition
		want = append(want, view(r))
	}
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}, 30)
	var have []string
	for _, r := range got {
		have = append(have, view(r))
	}
	sort.Strings(want)
	sort.Strings(have)
	if strings.Join(want, "\n") != strings.Join(have, "\n") {
		t.Errorf("consumed:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
}

func TestAutoCreateTopic(t *testing.T) {
	topic := topicName("go-auto")
	cl := client(t, kgo.AllowAutoTopicCreation())
	produceSync(t, cl, []*kgo.Record{{Topic: topic, Value: []byte("auto")}})
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, 1)
	if string(got[0].Value) != "auto" {
		t.Errorf("got %s", view(got[0]))
	}
}

func TestTransactions(t *testing.T) {
	needs(t, "txn")
	ctx := ctxT(t)
	topic := createTopic(t, topicName("go-txn"), 1, nil)
	cl := client(t, kgo.TransactionalID("go-txn-"+runID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, commit := range []bool{true, false} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		v := "aborted"
		if commit {
			v = "committed"
		}
		produceSync(t, cl, []*kgo.Record{{Topic: topic, Value: []byte(v + "1")}, {Topic: topic, Value: []byte(v + "2")}})
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	got := consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, 2, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if string(got[0].Value) != "committed1" || string(got[1].Value) != "committed2" {
		t.Errorf("read_committed: %s, %s", view(got[0]), view(got[1]))
	}
	got = consume(t, topic, map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}, 4)
	if string(got[2].Value) != "aborted1" {
		t.Errorf("read_uncommitted: %s", view(got[2]))
	}
}

func TestGroupConsumer(t *testing.T) {
	needs(t, "groups")
	ctx := ctxT(t)
	topic := createTopic(t, topicName("go-group"), 2, nil)
	p := client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))})
	}
	produceSync(t, p, recs)
	group := "go-group-" + runID
	cl := client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for n < 10 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		n += len(fs.Records())
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	os, err := kadm.NewClient(p).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Error(); err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	for part := int32(0); part < 2; part++ {
		o, ok := os.Lookup(topic, part)
		if !ok || o.At != 5 || o.Err != nil {
			t.Errorf("committed offset of partition %d: %+v (found %v); all: %+v", part, o, ok, os)
		}
	}
}

func val(c kadm.Config) string { return c.MaybeValue() }
