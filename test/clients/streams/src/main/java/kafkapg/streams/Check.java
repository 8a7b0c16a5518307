package kafkapg.streams;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka Streams exactly_once_v2 through kill -9 (issue 8). Input lines are produced (idempotent)
 * at a steady pace while the WordCount instance (another JVM) is started, killed with SIGKILL a
 * random 1-4 s after it has written its first output record, and restarted, STREAMS_KILLS times
 * (default 2); the last instance runs until the output is complete. (A kill at a fixed time after
 * the start could land before the instance had joined its group and restored its state, which
 * takes longer on a loaded machine, and then cut no transaction.) The output topic read with
 * read_committed must then hold, for every word, the counts 1, 2, ..., N in order: no count twice
 * (an aborted transaction shown, or a replay committed twice), none missing, and N the word's
 * exact count in the input.
 *
 * Environment: KAFKA_BOOTSTRAP (127.0.0.1:9092), STREAMS_KILLS (2), STREAMS_LINES (3000),
 * STREAMS_WAIT_S (180: how long the last instance may take to finish, and each killed one to
 * write its first output). Prints one line per check and "N passed, M failed" last.
 */
public final class Check {
    static final String BOOTSTRAP = System.getenv().getOrDefault("KAFKA_BOOTSTRAP", "127.0.0.1:9092");
    static final int KILLS = Integer.parseInt(System.getenv().getOrDefault("STREAMS_KILLS", "2"));
    static final int LINES = Integer.parseInt(System.getenv().getOrDefault("STREAMS_LINES", "3000"));
    static final int WAIT_S = Integer.parseInt(System.getenv().getOrDefault("STREAMS_WAIT_S", "180"));
    static int passed = 0, failed = 0;

    private Check() {}

    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok     " : "FAILED ") + what);
        if (ok) passed++; else failed++;
    }

    static String line(int i) {
        return "w" + (i % 13) + " w" + ((i * 7) % 29) + " x" + (i % 5);
    }

    /** The output topic's log end offsets summed (read_uncommitted: open transactions count). */
    static long outputEnd(Admin admin, String out) throws Exception {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (int p = 0; p < 2; p++) req.put(new TopicPartition(out, p), OffsetSpec.latest());
        long sum = 0;
        for (var e : admin.listOffsets(req, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED))
                .all().get(30, TimeUnit.SECONDS).values())
            sum += e.offset();
        return sum;
    }

    static Process start(String app, String in, String out, Path state, Path logs, int run) throws Exception {
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                WordCount.class.getName(), BOOTSTRAP, app, in, out, state.toString());
        pb.redirectErrorStream(true);
        pb.redirectOutput(logs.resolve("wordcount-" + run + ".log").toFile());
        return pb.start();
    }

    public static void main(String[] args) throws Exception {
        String id = Long.toHexString(System.nanoTime() & 0xffffffffL);
        String in = "streams-in-" + id, out = "streams-out-" + id, app = "streams-wc-" + id;
        Path work = Files.createTempDirectory("streams-eos-");
        Path state = work.resolve("state");
        System.out.println("broker " + BOOTSTRAP + ", input " + in + ", output " + out + ", " + LINES
                + " lines, " + KILLS + " kills, logs in " + work);

        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        Admin admin = Admin.create(ap);
        admin.createTopics(List.of(new NewTopic(in, 2, (short) 1), new NewTopic(out, 2, (short) 1)))
                .all().get(60, TimeUnit.SECONDS);

        Map<String, Long> expected = new TreeMap<>();
        for (int i = 0; i < LINES; i++)
            for (String w : line(i).split(" ")) expected.merge(w, 1L, Long::sum);

        // the input, paced over the kill window so that every kill lands mid-stream; once the kills
        // are done the rest goes at once
        long produceMs = (long) (KILLS + 1) * 10000;
        AtomicBoolean killsDone = new AtomicBoolean(false);
        AtomicReference<Exception> produceError = new AtomicReference<>();
        Thread producer = new Thread(() -> {
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
            pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                long t0 = System.currentTimeMillis();
                for (int i = 0; i < LINES; i++) {
                    p.send(new ProducerRecord<>(in, i % 2, "line" + i, line(i)));
                    long due = t0 + produceMs * (i + 1) / LINES;
                    long now = System.currentTimeMillis();
                    if (due > now && !killsDone.get()) {
                        p.flush();
                        Thread.sleep(due - now);
                    }
                }
                p.flush();
            } catch (Exception e) {
                produceError.set(e);
            }
        });
        producer.start();

        Random rnd = new Random();
        int midStream = 0;
        int writing = 0;
        for (int k = 0; k < KILLS; k++) {
            long before = outputEnd(admin, out), t0 = System.currentTimeMillis();
            Process p = start(app, in, out, state, work, k);
            long firstOutputMs = -1;
            while (System.currentTimeMillis() < t0 + WAIT_S * 1000L && p.isAlive()) {
                if (outputEnd(admin, out) > before) { firstOutputMs = System.currentTimeMillis() - t0; break; }
                Thread.sleep(100);
            }
            if (firstOutputMs >= 0) writing++;
            Thread.sleep(1000 + rnd.nextInt(3000));
            boolean alive = producer.isAlive();
            p.destroyForcibly(); // SIGKILL
            p.waitFor();
            System.out.println("kill -9 #" + (k + 1) + " (exit " + p.exitValue() + ")"
                    + (firstOutputMs >= 0 ? ", first output " + firstOutputMs + " ms after the start" : ", no output before it")
                    + (alive ? ", input still arriving" : ""));
            if (alive && p.exitValue() == 137) midStream++;
        }
        killsDone.set(true);
        admin.close();
        Process last = start(app, in, out, state, work, KILLS);
        producer.join();
        check(produceError.get() == null, "input produced: " + LINES + " lines"
                + (produceError.get() == null ? "" : " (" + produceError.get() + ")"));
        check(midStream == KILLS && writing == KILLS, midStream + " of " + KILLS + " kills with SIGKILL while input was still arriving, "
                + writing + " of them after the instance had written output");

        // the output, read_committed, until it holds every count or time runs out
        Map<String, List<Long>> seen = new HashMap<>();
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
        boolean complete = false;
        long records = 0;
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(out)) tps.add(new TopicPartition(out, pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + WAIT_S * 1000L;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(500))) {
                    seen.computeIfAbsent(r.key(), x -> new ArrayList<>()).add(r.value());
                    records++;
                }
                complete = true;
                for (Map.Entry<String, Long> e : expected.entrySet()) {
                    List<Long> l = seen.get(e.getKey());
                    if (l == null || l.get(l.size() - 1) < e.getValue()) { complete = false; break; }
                }
                if (complete || !last.isAlive()) break;
            }
            // anything a late transaction could still add
            for (int i = 0; i < 4; i++)
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(500))) {
                    seen.computeIfAbsent(r.key(), x -> new ArrayList<>()).add(r.value());
                    records++;
                }
        }
        check(last.isAlive(), "the last WordCount instance is still running");
        last.destroy(); // SIGTERM: KafkaStreams.close() in the shutdown hook
        if (!last.waitFor(60, TimeUnit.SECONDS)) last.destroyForcibly();

        long want = expected.values().stream().mapToLong(Long::longValue).sum();
        int exact = 0, wrongSeq = 0;
        StringBuilder bad = new StringBuilder();
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            List<Long> l = seen.getOrDefault(e.getKey(), List.of());
            boolean seq = l.size() == e.getValue();
            for (int i = 0; seq && i < l.size(); i++) seq = l.get(i) == i + 1;
            if (!l.isEmpty() && l.get(l.size() - 1).equals(e.getValue())) exact++;
            if (!seq) {
                wrongSeq++;
                if (bad.length() < 600) bad.append(" ").append(e.getKey()).append(": want 1..").append(e.getValue())
                        .append(", got ").append(l.size()).append(" counts, last ")
                        .append(l.isEmpty() ? "none" : l.get(l.size() - 1)).append(";");
            }
        }
        check(complete && exact == expected.size(), "final counts exact for " + exact + " of " + expected.size() + " words (read_committed)");
        check(wrongSeq == 0 && records == want, "every word's counts are 1..N once each, in order: " + records
                + " output records, " + want + " input words" + (wrongSeq == 0 ? "" : "; " + wrongSeq + " words wrong:" + bad));
        // the kills must have cut transactions that had sent output records (else this proves little)
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        long uncommitted = 0;
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(out)) tps.add(new TopicPartition(out, pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < deadline) {
                uncommitted += c.poll(Duration.ofMillis(500)).count();
                boolean atEnd = true;
                for (TopicPartition tp : tps) if (c.position(tp) < end.get(tp)) atEnd = false;
                if (atEnd) break;
            }
        }
        check(uncommitted > records, "the kills aborted transactions with output records: read_uncommitted reads "
                + uncommitted + " records, read_committed " + records);
        for (String w : seen.keySet())
            if (!expected.containsKey(w)) check(false, "no unexpected word in the output: " + w);

        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
