package clienttests

// A share session (KIP-932) is the broker's, not the connection's: franz-go sends ShareFetch on its
// fetch connection and ShareAcknowledge on another one, and kafka_pg's listener workers share one
// accept queue, so the two may be served by different workers. Found by franz-go's own
// TestShareGroupETL (acks lost with SHARE_SESSION_NOT_FOUND, records redelivered after their lock).

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareSessionAcrossConnections(t *testing.T) {
	needs(t, "groups")
	const n = 32
	topic := createTopic(t, topicName("share-sess"), 1, nil)
	group := topicName("share-sess-group")
	ctx := ctxT(t)
	a := client(t)
	td, err := admin(t).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td[topic].Err)
	}
	topicID := td[topic].ID
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	member := base64.RawURLEncoding.EncodeToString(raw[:])

	// read from the start, whenever the broker sets the share-partition up
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", str("earliest")
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{cfg}
	ia.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	if ir, err := ia.RequestWith(ctx, a); err != nil || ir.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs share.auto.offset.reset: %v %v", err, kerr.ErrorForCode(ir.Resources[0].ErrorCode))
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte{byte('a' + i)}}
	}
	produceSync(t, a, recs)

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{topic}
	hr, err := hb.RequestWith(ctx, a)
	if err != nil || hr.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat: %v %v", err, kerr.ErrorForCode(hr.ErrorCode))
	}
	defer func() {
		hb.MemberEpoch = -1
		_, _ = hb.RequestWith(ctx, a)
	}()

	fetch := func(epoch int32, wait int32) *kmsg.ShareFetchResponse {
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID, f.ShareSessionEpoch = &group, &member, epoch
		f.MaxWaitMillis, f.MinBytes, f.MaxBytes, f.MaxRecords, f.BatchSize = wait, 1, 1<<20, 500, 500
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.PartitionMaxBytes = 1 << 20
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID, ft.Partitions = topicID, []kmsg.ShareFetchRequestTopicPartition{p}
		if epoch == 0 {
			f.Topics = []kmsg.ShareFetchRequestTopic{ft}
		}
		r, err := f.RequestWith(ctx, a)
		if err != nil {
			t.Fatalf("ShareFetch epoch %d: %v", epoch, err)
		}
		if r.ErrorCode != 0 {
			t.Fatalf("ShareFetch epoch %d: %v", epoch, kerr.ErrorForCode(r.ErrorCode))
		}
		return r
	}
	// epoch 0 opens the session, the next ones acquire the records
	acquired := 0
	epoch := int32(0)
	for deadline := time.Now().Add(30 * time.Second); acquired < n && time.Now().Before(deadline); epoch++ {
		for _, ft := range fetch(epoch, 500).Topics {
			for _, p := range ft.Partitions {
				for _, ar := range p.AcquiredRecords {
					acquired += int(ar.LastOffset - ar.FirstOffset + 1)
				}
			}
		}
	}
	if acquired != n {
		t.Fatalf("acquired %d records, want %d", acquired, n)
	}

	// each record accepted by a ShareAcknowledge on another client (another connection), the
	// session epoch going on from the fetches'. The clients connect all at once: an idle broker's
	// first listener worker would take connections made one by one, a burst reaches the others.
	clients := make([]*kgo.Client, n)
	var wg sync.WaitGroup
	for i := range clients {
		b, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		clients[i] = b
	}
	for _, b := range clients {
		wg.Add(1)
		go func(b *kgo.Client) {
			defer wg.Done()
			_ = b.Ping(ctx)
		}(b)
	}
	wg.Wait()
	for off := int64(0); off < n; off++ {
		b := clients[off]
		ack := kmsg.NewPtrShareAcknowledgeRequest()
		ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &member, epoch
		batch := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		batch.FirstOffset, batch.LastOffset, batch.AcknowledgeTypes = off, off, []int8{1}
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		p.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{batch}
		at := kmsg.NewShareAcknowledgeRequestTopic()
		at.TopicID, at.Partitions = topicID, []kmsg.ShareAcknowledgeRequestTopicPartition{p}
		ack.Topics = []kmsg.ShareAcknowledgeRequestTopic{at}
		r, err := ack.RequestWith(ctx, b)
		if err != nil {
			t.Fatalf("ShareAcknowledge of offset %d (epoch %d): %v", off, epoch, err)
		}
		if r.ErrorCode != 0 {
			t.Fatalf("ShareAcknowledge of offset %d (epoch %d) on another connection: %v", off, epoch,
				kerr.ErrorForCode(r.ErrorCode))
		}
		for _, t2 := range r.Topics {
			for _, p2 := range t2.Partitions {
				if p2.ErrorCode != 0 {
					t.Fatalf("ShareAcknowledge of offset %d: partition error %v", off, kerr.ErrorForCode(p2.ErrorCode))
				}
			}
		}
		epoch++
	}
	// the fetch connection's session saw those epochs go by
	fetch(epoch, 0)
	epoch++
	// and nothing is left to deliver: all n were accepted, none comes back
	for _, ft := range fetch(epoch, 500).Topics {
		for _, p := range ft.Partitions {
			if len(p.AcquiredRecords) > 0 {
				t.Fatalf("accepted records delivered again: %+v", p.AcquiredRecords)
			}
		}
	}
}
