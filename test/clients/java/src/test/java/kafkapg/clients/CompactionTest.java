package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Log compaction (cleanup.policy=compact, issue 9): the broker's log cleaner keeps each key's
 * latest record at its original offset, and removes a tombstone once delete.retention.ms has passed
 * since its segment was first cleaned; a consumer reading the changelog from the start sees offsets
 * with gaps and each key's latest value.
 *
 * The cleaner must look for work often: Apache Kafka started with
 * KAFKA_BROKER_PROPS="log.cleaner.backoff.ms=1000" (test/clients/kafka/kafka.sh), kafka_pg with
 * kafka.log_cleaner_backoff_ms = 1000 (test/run-tests sets it for the clients part).
 */
class CompactionTest {

    /** Every record of the partition from offset 0 up to end, read by a fresh consumer. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(TopicPartition tp, long end) {
        return readAll(tp, end, "read_uncommitted");
    }

    static List<ConsumerRecord<byte[], byte[]>> readAll(TopicPartition tp, long end, String isolation) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            while (c.position(tp) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out;
    }

    static String key(ConsumerRecord<byte[], byte[]> r) {
        return Kit.str(r.key());
    }

    @Test
    void a_compacted_changelog_keeps_each_keys_latest_value_at_its_offset_and_drops_old_tombstones()
            throws Exception {
        String t = Kit.topic("changelog");
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, Map.of("cleanup.policy", "compact", "segment.ms", "100",
                    "min.cleanable.dirty.ratio", "0.01", "delete.retention.ms", "1000"));
        }
        // three rounds of k0..k9, a segment each; then a tombstone for k1, and a record that closes
        // the segment holding it (segments roll on the next append after segment.ms)
        Map<String, Long> latestOffset = new HashMap<>();
        Map<String, String> latestValue = new HashMap<>();
        // each round is one lz4 batch (linger.ms): compaction filters records out of compressed
        // batches and compresses them again, which the consumer's CRC check and codec then read
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4",
                ProducerConfig.LINGER_MS_CONFIG, "50")) {
            for (int round = 0; round < 3; round++) {
                List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                for (int k = 0; k < 10; k++) {
                    String v = "v" + round + "-" + k;
                    sent.add(p.send(new ProducerRecord<>(t, 0, Kit.bytes("k" + k), Kit.bytes(v))));
                    latestValue.put("k" + k, v);
                }
                p.flush();
                for (int k = 0; k < 10; k++) latestOffset.put("k" + k, sent.get(k).get().offset());
                Thread.sleep(150);
            }
            RecordMetadata m = p.send(new ProducerRecord<>(t, 0, Kit.bytes("k1"), null)).get();
            latestOffset.put("k1", m.offset());
            latestValue.put("k1", null);
            Thread.sleep(150);
            p.send(new ProducerRecord<>(t, 0, Kit.bytes("end"), Kit.bytes("x"))).get();
        }
        long end;
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            end = c.endOffsets(List.of(tp)).get(tp);
        }
        assertEquals(32L, end, "31 records and one more: the log end");

        // the cleaner compacts on its own: wait until k0 has one record left
        List<ConsumerRecord<byte[], byte[]>> rs = List.of();
        long deadline = System.nanoTime() + Kit.WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            rs = readAll(tp, end);
            if (rs.stream().filter(r -> key(r).equals("k0")).count() == 1) break;
            Thread.sleep(500);
        }
        assertEquals(1L, rs.stream().filter(r -> key(r).equals("k0")).count(),
                "k0 has one record left after compaction: " + rs.size() + " records read");
        // each key's latest value at its original offset; offsets rise with gaps
        Map<Long, ConsumerRecord<byte[], byte[]>> byOffset = new HashMap<>();
        long prev = -1;
        for (ConsumerRecord<byte[], byte[]> r : rs) {
            assertTrue(r.offset() > prev, "offsets rise");
            prev = r.offset();
            byOffset.put(r.offset(), r);
        }
        assertTrue(rs.size() < end, "records were removed: " + rs.size() + " of " + end);
        for (int k = 0; k < 10; k++) {
            String key = "k" + k;
            ConsumerRecord<byte[], byte[]> r = byOffset.get(latestOffset.get(key));
            if (latestValue.get(key) == null) {
                // the tombstone stays until delete.retention.ms after its first clean
                if (r != null) assertNull(r.value(), "k1's tombstone at its offset");
                continue;
            }
            assertNotNull(r, key + "'s latest record at offset " + latestOffset.get(key));
            assertEquals(key, key(r));
            assertEquals(latestValue.get(key), Kit.str(r.value()), key + "'s latest value");
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            assertEquals(0L, c.beginningOffsets(List.of(tp)).get(tp), "compaction does not move the log start");
            assertEquals(end, c.endOffsets(List.of(tp)).get(tp), "compaction does not move the log end");
        }

        // a fetch from a removed offset returns the next record kept
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            c.assign(List.of(tp));
            c.seek(tp, 1);
            List<ConsumerRecord<byte[], byte[]>> first = new ArrayList<>();
            long until = System.nanoTime() + Kit.WAIT.toNanos();
            while (first.isEmpty() && System.nanoTime() < until) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) first.add(r);
            }
            assertFalse(first.isEmpty(), "a record after offset 1");
            assertEquals(rs.stream().filter(r -> r.offset() >= 1).findFirst().get().offset(),
                    first.get(0).offset(), "the next record kept after offset 1");
        }

        // later, the tombstone goes (more records make the log dirty, so a clean surely runs)
        Thread.sleep(1200);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            p.send(new ProducerRecord<>(t, 0, Kit.bytes("k2"), Kit.bytes("newest"))).get();
            Thread.sleep(150);
            p.send(new ProducerRecord<>(t, 0, Kit.bytes("end"), Kit.bytes("y"))).get();
        }
        long end2 = end + 2;
        deadline = System.nanoTime() + Kit.WAIT.toNanos();
        boolean tombstoneGone = false;
        while (System.nanoTime() < deadline && !tombstoneGone) {
            rs = readAll(tp, end2);
            tombstoneGone = rs.stream().noneMatch(r -> key(r).equals("k1"))
                    && rs.stream().filter(r -> key(r).equals("k2")).count() == 1;
            if (!tombstoneGone) Thread.sleep(500);
        }
        assertTrue(tombstoneGone, "k1's tombstone is gone after delete.retention.ms, and k2 has one record: "
                + rs.stream().map(r -> r.offset() + ":" + key(r)).toList());
        ConsumerRecord<byte[], byte[]> k2 =
                rs.stream().filter(r -> key(r).equals("k2")).findFirst().get();
        assertEquals("newest", Kit.str(k2.value()));
        assertEquals(end, k2.offset(), "k2's newest value at the offset it was given");
    }

    /**
     * Transactions in a compacted topic (KIP-98 with the cleaner's CleanedTransactionMetadata): the
     * records of an aborted transaction are removed by the clean, so even a read_uncommitted consumer
     * no longer sees them; committed records are compacted like any others.
     */
    @Test
    @Tag("transactions")
    void a_compacted_topic_drops_aborted_transactions_and_keeps_committed_ones() throws Exception {
        String t = Kit.topic("txchangelog");
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = Kit.admin()) {
            Kit.createTopic(admin, t, 1, Map.of("cleanup.policy", "compact", "segment.ms", "100",
                    "min.cleanable.dirty.ratio", "0.01"));
        }
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.TRANSACTIONAL_ID_CONFIG, t + "-tx")) {
            p.initTransactions();
            p.beginTransaction();
            for (String k : List.of("a", "b", "c")) p.send(new ProducerRecord<>(t, 0, Kit.bytes(k), Kit.bytes("c1-" + k)));
            p.commitTransaction();
            Thread.sleep(150);
            p.beginTransaction();
            for (String k : List.of("a", "b", "c")) p.send(new ProducerRecord<>(t, 0, Kit.bytes(k), Kit.bytes("aborted-" + k)));
            p.flush();
            p.abortTransaction();
            Thread.sleep(150);
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 0, Kit.bytes("a"), Kit.bytes("c2-a")));
            p.commitTransaction();
            Thread.sleep(150);
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 0, Kit.bytes("end"), Kit.bytes("x")));
            p.commitTransaction();
        }
        long end;
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
            end = c.endOffsets(List.of(tp)).get(tp);
        }
        // wait until a clean has removed the aborted records (even read_uncommitted no longer sees them)
        List<ConsumerRecord<byte[], byte[]>> rs = List.of();
        long deadline = System.nanoTime() + Kit.WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            rs = readAll(tp, end, "read_uncommitted");
            boolean aborted = rs.stream().anyMatch(r -> Kit.str(r.value()).startsWith("aborted"));
            if (!aborted && rs.stream().filter(r -> key(r).equals("a")).count() == 1) break;
            Thread.sleep(500);
        }
        assertTrue(rs.stream().noneMatch(r -> Kit.str(r.value()).startsWith("aborted")),
                "no aborted record left: " + rs.stream().map(r -> r.offset() + ":" + Kit.str(r.value())).toList());
        List<ConsumerRecord<byte[], byte[]>> committed = readAll(tp, end, "read_committed");
        Map<String, String> values = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : committed) values.put(key(r), Kit.str(r.value()));
        assertEquals("c2-a", values.get("a"));
        assertEquals("c1-b", values.get("b"));
        assertEquals("c1-c", values.get("c"));
        assertEquals(1L, committed.stream().filter(r -> key(r).equals("a")).count(), "a's older value is gone");
    }
}
