package kafkapg.clients;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Retention (cleanup.policy=delete, issue 9): the broker deletes old segments by itself and a
 * consumer that fell below the new log start follows its auto.offset.reset.
 *
 * The broker must check retention often: Apache Kafka started with
 * KAFKA_BROKER_PROPS="log.retention.check.interval.ms=1000" (test/clients/kafka/kafka.sh), kafka_pg
 * with kafka.log_retention_check_interval_ms = 1000 (test/run-tests sets it for the clients part).
 */
class RetentionTest {

    @Test
    void retention_ms_deletes_old_segments_and_a_consumer_below_the_log_start_follows_auto_offset_reset()
            throws Exception {
        String t = Kit.topic("retain");
        TopicPartition tp = new TopicPartition(t, 0);
        try (Admin admin = Kit.admin()) {
            // a segment per record (segment.ms rolls on the next append), each kept 2 s
            Kit.createTopic(admin, t, 1, Map.of("segment.ms", "100", "retention.ms", "2000"));
        }
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("r" + i))).get();
                Thread.sleep(150);
            }
        }

        // the log start moves on its own, within a few retention checks
        long start = 0;
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            while (start == 0 && System.nanoTime() < deadline) {
                start = c.beginningOffsets(List.of(tp)).get(tp);
                if (start == 0) Thread.sleep(250);
            }
        }
        assertTrue(start > 0, "the log start offset moved past 0 by retention.ms");

        // auto.offset.reset=none: a position below the log start is OffsetOutOfRange
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none")) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            OffsetOutOfRangeException seen = Kit.pollUntilOutOfRange(c);
            assertNotNull(seen, "OffsetOutOfRangeException for offset 0 below the log start " + start);
            assertEquals(0L, seen.offsetOutOfRangePartitions().get(tp));
        }

        // auto.offset.reset=earliest: the consumer resets to the log start and reads what is there
        try (KafkaProducer<byte[], byte[]> p = Kit.producer()) {
            p.send(new ProducerRecord<>(t, 0, null, Kit.bytes("after"))).get();
        }
        try (KafkaConsumer<byte[], byte[]> c = Kit.consumer()) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            long deadline = System.nanoTime() + Kit.WAIT.toNanos();
            ConsumerRecord<byte[], byte[]> first = null;
            boolean sawAfter = false;
            while (!sawAfter && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    if (first == null) first = r;
                    if (Kit.str(r.value()).equals("after")) sawAfter = true;
                }
            }
            assertNotNull(first, "records read after the reset");
            assertTrue(first.offset() >= start, "the first record read (" + first.offset()
                    + ") is at or past the log start seen before (" + start + ")");
            assertTrue(sawAfter, "the record produced after the deletion is read");
        }
    }
}
