package groups;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidRegularExpression;
import org.junit.jupiter.api.Test;

/**
 * KIP-848 regular-expression subscriptions: consumer.subscribe(SubscriptionPattern) with
 * group.protocol=consumer sends the pattern (RE2/J syntax) in ConsumerGroupHeartbeat v1; the
 * coordinator matches it against whole topic names, and again when topics are created or deleted.
 */
class RegexSubscriptionTest {
    static Set<String> topicsOf(Set<TopicPartition> s) {
        Set<String> out = new TreeSet<>();
        for (var tp : s) out.add(tp.topic());
        return out;
    }

    @Test
    void a_pattern_follows_topics_as_they_are_created_and_deleted() throws Exception {
        String prefix = "grp-rx-" + Kit.RUN;
        String a = prefix + "-a", b = prefix + "-b", other = "x" + prefix + "-a";
        Kit.createTopic(a, 2);
        Kit.createTopic(other, 1); // matches only if the pattern is not anchored
        try (var c = new KafkaConsumer<String, String>(Kit.consumerProps("g-" + prefix, "consumer"));
             Admin admin = Kit.admin()) {
            c.subscribe(new SubscriptionPattern(prefix + "-[a-z]+"));
            long t0 = System.currentTimeMillis();
            Kit.waitFor("both partitions of " + a, 60000,
                () -> { c.poll(Duration.ofMillis(100)); return c.assignment().size() == 2; },
                () -> c.assignment().toString());
            assertEquals(Set.of(a), topicsOf(c.assignment()), "only the whole-name match");
            System.out.printf("regex: assigned after %d ms%n", System.currentTimeMillis() - t0);

            Kit.createTopic(b, 1);
            Kit.produce(b, 1, "rx", 5);
            long t1 = System.currentTimeMillis();
            List<String> keys = new ArrayList<>();
            Kit.waitFor("the new topic " + b + " and its records", 120000, () -> {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) keys.add(r.key());
                return topicsOf(c.assignment()).equals(Set.of(a, b)) && keys.size() >= 5;
            }, () -> c.assignment() + " keys=" + keys);
            System.out.printf("regex: created topic assigned after %d ms%n", System.currentTimeMillis() - t1);

            admin.deleteTopics(List.of(a)).all().get(30, TimeUnit.SECONDS);
            long t2 = System.currentTimeMillis();
            Kit.waitFor("only " + b + " once " + a + " is deleted", 120000,
                () -> { c.poll(Duration.ofMillis(100)); return topicsOf(c.assignment()).equals(Set.of(b)); },
                () -> c.assignment().toString());
            System.out.printf("regex: deleted topic revoked after %d ms%n", System.currentTimeMillis() - t2);
        }
    }

    @Test
    void an_invalid_pattern_is_refused() throws Exception {
        String prefix = "grp-rx-bad-" + Kit.RUN;
        try (var c = new KafkaConsumer<String, String>(Kit.consumerProps("g-" + prefix, "consumer"))) {
            c.subscribe(new SubscriptionPattern("grp-rx-(unclosed"));
            long deadline = System.currentTimeMillis() + 30000;
            InvalidRegularExpression e = null;
            while (e == null && System.currentTimeMillis() < deadline) {
                try {
                    c.poll(Duration.ofMillis(200));
                } catch (InvalidRegularExpression x) {
                    e = x;
                }
            }
            assertNotNull(e, "no InvalidRegularExpression within 30 s");
            System.out.println("regex: invalid pattern: " + e.getMessage());
        }
    }
}
