package groups;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

/** A group member polling in its own thread; the test reads its state. */
final class Member implements AutoCloseable {
    final String label;
    final Properties props;
    final String topic;
    final boolean commit;
    volatile Set<TopicPartition> assignment = Set.of();
    volatile int generation = -1;
    volatile String memberId = "";
    volatile boolean pause;
    volatile int stopAfter = Integer.MAX_VALUE; // stop polling once this many records were received
    final AtomicInteger assignedCalls = new AtomicInteger();
    final AtomicInteger revokedCalls = new AtomicInteger();
    final List<ConsumerRecord<String, String>> records = Collections.synchronizedList(new ArrayList<>());
    final AtomicReference<Throwable> error = new AtomicReference<>();
    private volatile boolean running = true;
    private final Thread thread;

    Member(String label, Properties props, String topic, boolean commit) {
        this.label = label;
        this.props = props;
        this.topic = topic;
        this.commit = commit;
        thread = new Thread(this::loop, "member-" + label);
        thread.setDaemon(true);
        thread.start();
    }

    private void loop() {
        try (var c = new KafkaConsumer<String, String>(props)) {
            c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> p) { if (!p.isEmpty()) revokedCalls.incrementAndGet(); }
                public void onPartitionsAssigned(Collection<TopicPartition> p) { assignedCalls.incrementAndGet(); }
            });
            while (running) {
                var recs = c.poll(Duration.ofMillis(100));
                for (var r : recs) records.add(r);
                if (commit && !recs.isEmpty()) c.commitSync();
                assignment = Set.copyOf(c.assignment());
                var gm = c.groupMetadata();
                generation = gm.generationId();
                memberId = gm.memberId();
                if (pause) c.pause(c.assignment());
                if (records.size() >= stopAfter) break;
            }
        } catch (Throwable t) {
            error.set(t);
            t.printStackTrace();
        }
        running = false;
    }

    boolean alive() { return thread.isAlive(); }

    void join() throws InterruptedException { thread.join(60000); }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(60000);
    }

    @Override
    public String toString() {
        return label + "{gen=" + generation + " parts=" + Kit.show(assignment) + " recs=" + records.size()
            + " assigned=" + assignedCalls + (error.get() != null ? " error=" + error.get() : "") + "}";
    }
}
