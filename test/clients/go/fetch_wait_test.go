// A Fetch's max_wait_ms is counted from when the broker received it, however often the
// broker is woken meanwhile (issue 14, item 1: kafka_pg restarted the wait on every wake-up,
// so a fetch on a quiet topic of a busy broker was never answered and franz-go's transactional
// ETL test hung).
package clienttests

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFetchMaxWaitOnQuietTopic(t *testing.T) {
	quiet := createTopic(t, topicName("go-quiet"), 1, nil)
	busy := createTopic(t, topicName("go-busy"), 1, nil)

	// the quiet topic's id, for Fetch v13+
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(quiet)
	meta.Topics = append(meta.Topics, mt)
	cl := client(t)
	mresp, err := meta.RequestWith(ctxT(t), cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", quiet, err)
	}
	quietID := mresp.Topics[0].TopicID

	// another client produces to the busy topic every 300 ms for the whole test: every append
	// wakes the broker's parked fetches
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := client(t, kgo.DefaultProduceTopic(busy))
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				p.Produce(ctx, &kgo.Record{Value: []byte("tick")}, nil)
			}
		}
	}()
	defer func() { stop(); <-done }()
	time.Sleep(700 * time.Millisecond) // the producer is running

	for i := 0; i < 3; i++ {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 2000
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = quiet
		ft.TopicID = quietID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = 0
		fp.FetchOffset = 0
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)

		start := time.Now()
		resp, err := req.RequestWith(ctxT(t), cl)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("fetch %d: %v after %v", i, err, took)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch %d: %d topics in the response", i, len(resp.Topics))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Fatalf("fetch %d: error %d, %d bytes of records on an empty topic", i, p.ErrorCode, len(p.RecordBatches))
		}
		// answered at its deadline: not before it (min_bytes was not reached), and not
		// restarted by the busy topic's appends (the defect answered after 19 s, or never)
		if took < 1800*time.Millisecond || took > 5*time.Second {
			t.Errorf("fetch %d with max_wait_ms=2000 on a quiet topic answered after %v", i, took)
		} else {
			t.Logf("fetch %d answered after %v", i, took.Round(time.Millisecond))
		}
	}
}
