package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Consumer without a group: assign, seek, offsets by position and by time, isolation levels. */
class ConsumerTest {

    /** Fills partition 0 of a new topic with n records "r0".."r{n-1}" in batches of batch records. */
    static TopicPartition filled(String base, int n, int batch) throws Exception {
        String t = Kit.topic(base);
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.LINGER_MS_CONFIG, 1000,
                ProducerConfig.BATCH_SIZE_CONFIG, 1 << 20)) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("k" + i), Kit.bytes("r" + i)));
                if ((i + 1) % batch == 0) p.flush();
            }
            p.flush();
        }
        return tp;
    }

    @Test
    void seek_into_the_middle_of_a_batch_starts_at_that_offset() throws Exception {
        TopicPartition tp = filled("cons-seek", 100, 25);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            c.assign(List.of(tp));
            for (long at : new long[] {37, 0, 99, 50, 24, 25}) {
                c.seek(tp, at);
                List<ConsumerRecord<byte[], byte[]>> got = Kit.poll(c, (int) (100 - at));
                assertEquals(at, got.get(0).offset(), "first offset after seek(" + at + ")");
                for (int i = 0; i < got.size(); i++) {
                    assertEquals(at + i, got.get(i).offset());
                    assertEquals("r" + (at + i), Kit.str(got.get(i).value()));
                    assertEquals("k" + (at + i), Kit.str(got.get(i).key()));
                }
                assertEquals(100, c.position(tp));
            }
        }
    }

    @Test
    void seek_to_beginning_and_end_and_beginning_end_offsets() throws Exception {
        TopicPartition tp = filled("cons-ends", 30, 10);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            assertEquals(Map.of(tp, 0L), c.beginningOffsets(List.of(tp)));
            assertEquals(Map.of(tp, 30L), c.endOffsets(List.of(tp)));
            c.assign(List.of(tp));
            c.seekToEnd(List.of(tp));
            assertEquals(30, c.position(tp));
            assertTrue(c.poll(Duration.ofMillis(500)).isEmpty(), "nothing after the end");
            c.seekToBeginning(List.of(tp));
            assertEquals(0, c.position(tp));
            assertEquals(30, Kit.poll(c, 30).size());
        }
    }

    @Test
    void auto_offset_reset_latest_and_earliest() throws Exception {
        TopicPartition tp = filled("cons-reset", 10, 10);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest")) {
            c.assign(List.of(tp));
            assertEquals(10, c.position(tp));
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")) {
            c.assign(List.of(tp));
            assertEquals(0, c.position(tp));
            // an offset past the end is out of range and resets to earliest
            c.seek(tp, 1000);
            List<ConsumerRecord<byte[], byte[]>> got = Kit.poll(c, 10);
            assertEquals(0, got.get(0).offset());
        }
    }

    @Test
    void offsets_for_times_finds_the_first_record_at_or_after_a_timestamp() throws Exception {
        String t = Kit.topic("cons-times");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        long t0 = System.currentTimeMillis() - 3_600_000L;
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            // ten batches, timestamps t0, t0+1000, ... (one record per send, flushed: one batch each)
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(t, 0, t0 + i * 1000L, null, Kit.bytes("r" + i))).get();
            }
            // and one batch of five with increasing timestamps inside it
            for (int i = 10; i < 15; i++) p.send(new ProducerRecord<>(t, 0, t0 + i * 1000L, null, Kit.bytes("r" + i)));
            p.flush();
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            Map<Long, Long> cases = new HashMap<>();
            cases.put(t0 - 5000, 0L);
            cases.put(t0, 0L);
            cases.put(t0 + 1, 1L);
            cases.put(t0 + 4500, 5L);
            cases.put(t0 + 9000, 9L);
            cases.put(t0 + 11_500, 12L);
            cases.put(t0 + 14_000, 14L);
            for (Map.Entry<Long, Long> e : cases.entrySet()) {
                OffsetAndTimestamp ot = c.offsetsForTimes(Map.of(tp, e.getKey())).get(tp);
                assertNotNull(ot, "offsetsForTimes(" + (e.getKey() - t0) + " ms after t0)");
                assertEquals(e.getValue().longValue(), ot.offset(), "offset for " + (e.getKey() - t0) + " ms after t0");
                assertEquals(t0 + e.getValue() * 1000L, ot.timestamp());
            }
            assertNull(c.offsetsForTimes(Map.of(tp, t0 + 15_000)).get(tp), "no record at or after the last timestamp");

            c.assign(List.of(tp));
            c.seek(tp, c.offsetsForTimes(Map.of(tp, t0 + 6500)).get(tp).offset());
            List<ConsumerRecord<byte[], byte[]>> got = Kit.poll(c, 8);
            assertEquals("r7", Kit.str(got.get(0).value()));
            assertEquals(t0 + 7000, got.get(0).timestamp());
        }
    }

    @Test
    void all_partitions_of_a_topic_read_from_one_assignment() throws Exception {
        String t = Kit.topic("cons-multi");
        int n = 6;
        Kit.createTopic(t, n);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            for (int i = 0; i < 600; i++) p.send(new ProducerRecord<>(t, i % n, null, Kit.bytes(Integer.toString(i))));
            p.flush();
        }
        List<ConsumerRecord<byte[], byte[]>> got = Kit.readFromStart(Kit.partitions(t, n), 600);
        Map<Integer, List<Integer>> byPartition = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> c : got)
            byPartition.computeIfAbsent(c.partition(), k -> new ArrayList<>()).add(Integer.parseInt(Kit.str(c.value())));
        for (int p = 0; p < n; p++) {
            List<Integer> l = byPartition.get(p);
            assertEquals(100, l.size(), "records in partition " + p);
            for (int j = 0; j < 100; j++) assertEquals(p + j * n, l.get(j).intValue(), "order in partition " + p);
        }
    }

    @Test
    void a_tiny_fetch_size_still_returns_whole_records_KIP_74() throws Exception {
        TopicPartition tp = filled("cons-tiny", 50, 50);
        List<ConsumerRecord<byte[], byte[]>> got = Kit.readFromStart(List.of(tp), 50,
                ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 1, ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 1);
        for (int i = 0; i < 50; i++) assertEquals("r" + i, Kit.str(got.get(i).value()));
    }

    @Test
    void a_waiting_fetch_returns_records_produced_while_it_waits() throws Exception {
        String t = Kit.topic("cons-longpoll");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 5000);
             KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            c.assign(List.of(tp));
            c.seekToEnd(List.of(tp));
            assertEquals(0, c.position(tp));
            Thread sender = new Thread(() -> {
                try {
                    Thread.sleep(700);
                    p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("late"))).get();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            sender.start();
            long start = System.nanoTime();
            List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
            while (got.isEmpty() && System.nanoTime() - start < 20_000_000_000L)
                c.poll(Duration.ofSeconds(10)).forEach(got::add);
            sender.join();
            assertEquals(1, got.size());
            assertEquals("late", Kit.str(got.get(0).value()));
            long ms = (System.nanoTime() - start) / 1_000_000;
            // the record arrives about when it is produced, not at the end of fetch.max.wait.ms
            assertTrue(ms < 4500, "record arrived after " + ms + " ms");
        }
    }

    @ParameterizedTest(name = "isolation.level={0}")
    @ValueSource(strings = {"read_committed", "read_uncommitted"})
    void non_transactional_records_are_visible_at_every_isolation_level(String isolation) throws Exception {
        TopicPartition tp = filled("cons-iso-" + isolation.substring(5), 40, 10);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation)) {
            assertEquals(40L, c.endOffsets(List.of(tp)).get(tp), "end offset (high watermark or LSO)");
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<ConsumerRecord<byte[], byte[]>> got = Kit.poll(c, 40);
            for (int i = 0; i < 40; i++) assertEquals("r" + i, Kit.str(got.get(i).value()));
        }
    }

    /**
     * A transactional producer commits one transaction and aborts another: read_committed sees only
     * the committed records, read_uncommitted sees both; neither sees the control records.
     * Needs FindCoordinator, AddPartitionsToTxn and EndTxn.
     */
    @Test
    @Tag("transactions")
    void read_committed_skips_aborted_transactions_and_read_uncommitted_does_not() throws Exception {
        String t = Kit.topic("cons-txn");
        Kit.createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        try (KafkaProducer<byte[], byte[]> p = Kit.producer(ProducerConfig.TRANSACTIONAL_ID_CONFIG, t + "-tx")) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("c" + i)));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("a" + i)));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("c5")));
            p.commitTransaction();
        }
        List<ConsumerRecord<byte[], byte[]>> committed = Kit.readFromStart(List.of(tp), 6,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> values = new ArrayList<>();
        committed.forEach(r -> values.add(Kit.str(r.value())));
        assertEquals(List.of("c0", "c1", "c2", "c3", "c4", "c5"), values);
        // offsets: 5 committed + marker (5), 5 aborted (6..10) + marker (11), c5 at 12, marker 13
        assertEquals(12, committed.get(5).offset());

        List<ConsumerRecord<byte[], byte[]>> all = Kit.readFromStart(List.of(tp), 11,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        values.clear();
        all.forEach(r -> values.add(Kit.str(r.value())));
        assertEquals(List.of("c0", "c1", "c2", "c3", "c4", "a0", "a1", "a2", "a3", "a4", "c5"), values);
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
            assertEquals(14L, c.endOffsets(List.of(tp)).get(tp));
        }
    }
}
