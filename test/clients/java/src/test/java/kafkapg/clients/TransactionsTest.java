package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Transactions over the wire with the Java client (KIP-98): the transaction coordinator
 * (FindCoordinator key type 1, InitProducerId with a transactional id, AddPartitionsToTxn,
 * AddOffsetsToTxn, TxnOffsetCommit, EndTxn), fencing by epoch, transaction timeouts, and the admin
 * APIs that describe transactions. Each test passes on Apache Kafka 4.4 first.
 *
 * Kafka 4.4 advertises transaction.version 2 (KIP-890 part 2) and the client uses it there;
 * kafka_pg does not, so the client uses version 1. The tests assert what both give.
 */
@Tag("transactions")
class TransactionsTest {

    static KafkaProducer<byte[], byte[]> txProducer(String id, Object... kv) {
        Object[] all = new Object[kv.length + 2];
        all[0] = ProducerConfig.TRANSACTIONAL_ID_CONFIG;
        all[1] = id;
        System.arraycopy(kv, 0, all, 2, kv.length);
        return Kit.producer(all);
    }

    static List<String> values(List<ConsumerRecord<byte[], byte[]>> records) {
        List<String> l = new ArrayList<>();
        records.forEach(r -> l.add(Kit.str(r.value())));
        return l;
    }

    static long endOffset(TopicPartition tp, String isolation) {
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation)) {
            return c.endOffsets(List.of(tp)).get(tp);
        }
    }

    /** Commit: read_committed readers get the records; the markers take offsets. */
    @Test
    void committed_transactions_are_read_committed() throws Exception {
        String t = Kit.topic("tx-commit");
        Kit.createTopic(t, 2);
        try (KafkaProducer<byte[], byte[]> p = txProducer(t + "-tx")) {
            p.initTransactions();
            for (int round = 0; round < 3; round++) {
                p.beginTransaction();
                for (int i = 0; i < 4; i++)
                    p.send(new ProducerRecord<>(t, i % 2, null, Kit.bytes("r" + round + "-" + i)));
                p.commitTransaction();
            }
        }
        TopicPartition p0 = new TopicPartition(t, 0);
        TopicPartition p1 = new TopicPartition(t, 1);
        List<String> got = values(Kit.readFromStart(List.of(p0), 6,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
        assertEquals(List.of("r0-0", "r0-2", "r1-0", "r1-2", "r2-0", "r2-2"), got);
        // 3 transactions of 2 records and a marker each
        assertEquals(9L, endOffset(p0, "read_committed"));
        assertEquals(9L, endOffset(p1, "read_uncommitted"));
    }

    /**
     * Consume-transform-produce: sendOffsetsToTransaction commits the group's offsets with the
     * output; an aborted round leaves neither; the group's committed offset is read back
     * (OffsetFetch with require_stable).
     */
    @Test
    void offsets_commit_with_the_transaction() throws Exception {
        String in = Kit.topic("tx-in");
        String out = Kit.topic("tx-out");
        String group = in + "-g";
        Kit.createTopic(in, 1);
        Kit.createTopic(out, 1);
        TopicPartition inTp = new TopicPartition(in, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(in, 0, null, Kit.bytes("v" + i)));
        }
        try (KafkaProducer<byte[], byte[]> p = txProducer(out + "-tx");
             KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.GROUP_ID_CONFIG, group,
                     ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                     ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
            p.initTransactions();
            c.subscribe(List.of(in));
            int copied = 0;
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            while (copied < 10 && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                p.beginTransaction();
                long next = -1;
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    p.send(new ProducerRecord<>(out, 0, null, Kit.bytes("out-" + Kit.str(r.value()))));
                    next = r.offset() + 1;
                }
                p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(next)), c.groupMetadata());
                p.commitTransaction();
                copied += rs.count();
            }
            assertEquals(10, copied, "records copied");

            // an aborted transaction commits no offset
            p.beginTransaction();
            p.send(new ProducerRecord<>(out, 0, null, Kit.bytes("never")));
            p.flush();
            p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(3)), c.groupMetadata());
            p.abortTransaction();
        }
        try (Admin admin = Kit.admin()) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            assertEquals(10L, committed.get(inTp).offset());
        }
        // a new consumer of the group (require_stable) starts after what was copied
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false)) {
            c.assign(List.of(inTp));
            assertEquals(10L, c.position(inTp));
        }
        List<String> got = values(Kit.readFromStart(List.of(new TopicPartition(out, 0)), 11,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"));
        for (int i = 0; i < 10; i++) assertEquals("out-v" + i, got.get(i));
        assertEquals("never", got.get(10));
    }

    /**
     * Fencing (KIP-98): a second producer with the same transactional.id aborts the first one's
     * open transaction and fences it; the last stable offset moves on; the new producer commits.
     */
    @Test
    void a_new_producer_fences_the_old_one_and_aborts_its_transaction() throws Exception {
        String t = Kit.topic("tx-fence");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        KafkaProducer<byte[], byte[]> old = txProducer(t + "-tx");
        try {
            old.initTransactions();
            old.beginTransaction();
            for (int i = 0; i < 3; i++) old.send(new ProducerRecord<>(t, 0, null, Kit.bytes("zombie" + i)));
            old.flush();
            assertEquals(0L, endOffset(tp, "read_committed"), "the open transaction holds the LSO");
            try (KafkaProducer<byte[], byte[]> p = txProducer(t + "-tx")) {
                p.initTransactions();
                // the zombie's transaction was aborted: 3 records and an ABORT marker
                assertEquals(4L, endOffset(tp, "read_committed"), "the LSO after the fence");
                p.beginTransaction();
                p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("fresh")));
                p.commitTransaction();
            }
            assertThrows(ProducerFencedException.class, old::commitTransaction);
        } finally {
            old.close(Duration.ZERO);
        }
        assertEquals(6L, endOffset(tp, "read_committed"));
        List<String> all = values(Kit.readFromStart(List.of(tp), 4,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted"));
        assertEquals(List.of("zombie0", "zombie1", "zombie2", "fresh"), all);
    }

    /**
     * Fetch lists the fenced transaction in aborted_transactions, from the store's
     * aborted-transaction index (issue 8, the visibility layer), and the client drops its records.
     */
    @Test
    void read_committed_skips_a_fenced_transaction() throws Exception {
        String t = Kit.topic("tx-fence-vis");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> old = txProducer(t + "-tx")) {
            old.initTransactions();
            old.beginTransaction();
            old.send(new ProducerRecord<>(t, 0, null, Kit.bytes("zombie")));
            old.flush();
            try (KafkaProducer<byte[], byte[]> p = txProducer(t + "-tx")) {
                p.initTransactions();
                p.beginTransaction();
                p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("fresh")));
                p.commitTransaction();
            }
        }
        assertEquals(List.of("fresh"), values(Kit.readFromStart(List.of(tp), 1,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")));
    }

    /**
     * transaction.timeout.ms: an abandoned transaction is aborted by the coordinator, the last
     * stable offset moves on and a read_committed consumer progresses; its producer is fenced.
     */
    @Test
    void an_abandoned_transaction_times_out() throws Exception {
        String t = Kit.topic("tx-timeout");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("before"))).get();
        }
        KafkaProducer<byte[], byte[]> p = txProducer(t + "-tx", ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 2000);
        try {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("abandoned")));
            p.flush();
            assertEquals(1L, endOffset(tp, "read_committed"), "the open transaction holds the LSO");
            try (KafkaProducer<byte[], byte[]> plain = Kit.producer()) {
                plain.send(new ProducerRecord<>(t, 0, null, Kit.bytes("after"))).get();
            }
            // Kafka checks every transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s)
            long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
            while (endOffset(tp, "read_committed") < 4 && System.nanoTime() < deadline) Thread.sleep(250);
            // before, abandoned, after, ABORT marker
            assertEquals(4L, endOffset(tp, "read_committed"), "the LSO once the transaction timed out");
            try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
                c.assign(List.of(tp));
                c.seek(tp, 2);
                assertEquals(List.of("after"), values(Kit.poll(c, 1)));
            }
            assertThrows(KafkaException.class, p::commitTransaction);
        } finally {
            p.close(Duration.ZERO);
        }
    }

    /** transaction.timeout.ms above transaction.max.timeout.ms (15 min by default) is refused. */
    @Test
    void a_timeout_above_the_maximum_is_refused() {
        try (KafkaProducer<byte[], byte[]> p = txProducer(Kit.topic("tx-maxtimeout"),
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 900001)) {
            // INVALID_TRANSACTION_TIMEOUT, which the client reports as an unexpected error
            KafkaException e = assertThrows(KafkaException.class, p::initTransactions);
            assertTrue(e.getMessage().contains("transaction.max.timeout.ms"), "got " + e);
        }
    }

    /** The admin client: listTransactions, describeTransactions, describeProducers. */
    @Test
    void transactions_are_listed_and_described() throws Exception {
        String t = Kit.topic("tx-describe");
        String id = t + "-tx";
        Kit.createTopic(t, 2);
        try (KafkaProducer<byte[], byte[]> p = txProducer(id);
             Admin admin = Kit.admin()) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 1, null, Kit.bytes("x")));
            p.send(new ProducerRecord<>(t, 1, null, Kit.bytes("y")));
            p.flush();

            TransactionDescription d = admin.describeTransactions(List.of(id)).description(id)
                    .get(30, TimeUnit.SECONDS);
            assertEquals(TransactionState.ONGOING, d.state());
            assertEquals(Set.of(new TopicPartition(t, 1)), d.topicPartitions());
            assertTrue(d.transactionStartTimeMs().isPresent());
            long pid = d.producerId();

            List<TransactionListing> ongoing = new ArrayList<>(admin.listTransactions(
                    new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING))
                            .filterProducerIds(Set.of(pid))).all().get(30, TimeUnit.SECONDS));
            assertEquals(1, ongoing.size());
            assertEquals(id, ongoing.get(0).transactionalId());

            List<ProducerState> producers = admin.describeProducers(List.of(new TopicPartition(t, 1)))
                    .partitionResult(new TopicPartition(t, 1)).get(30, TimeUnit.SECONDS).activeProducers();
            assertEquals(1, producers.size());
            assertEquals(pid, producers.get(0).producerId());
            assertEquals(1, producers.get(0).lastSequence());
            assertEquals(0L, producers.get(0).currentTransactionStartOffset().getAsLong());

            p.commitTransaction();
            // Kafka writes the markers after answering EndTxn: PrepareCommit for a moment
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            do {
                d = admin.describeTransactions(List.of(id)).description(id).get(30, TimeUnit.SECONDS);
            } while (d.state() == TransactionState.PREPARE_COMMIT && System.nanoTime() < deadline);
            assertEquals(TransactionState.COMPLETE_COMMIT, d.state());
            assertTrue(d.topicPartitions().isEmpty());
            Set<String> ids = new TreeSet<>();
            admin.listTransactions().all().get(30, TimeUnit.SECONDS).forEach(l -> ids.add(l.transactionalId()));
            assertTrue(ids.contains(id));
        }
    }
}
