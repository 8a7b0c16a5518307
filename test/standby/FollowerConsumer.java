import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java (kafka-clients) consumer of test/standby/follower_test.py: partition 0 of TOPIC from the
 * beginning, with client.rack=RACK (KIP-392: the leader sends it to the standby of its rack), no
 * group, auto.offset.reset=earliest (so a truncation found by its position validation, KIP-320,
 * moves it back to where the logs diverge). One JSON line per event:
 * {"t":"rec","o":OFFSET,"e":LEADER_EPOCH,"v":VALUE} for each record,
 * {"t":"pref","v":N} when its preferred-read-replica metric changes (-1: the leader),
 * {"t":"err","msg":M} for an exception of poll. Runs until STOPFILE exists.
 *
 * Usage: FollowerConsumer BOOTSTRAP TOPIC RACK OUTFILE STOPFILE
 */
public final class FollowerConsumer {
    private FollowerConsumer() {}

    public static void main(String[] a) throws Exception {
        String bootstrap = a[0];
        String topic = a[1];
        String rack = a[2];
        File stop = new File(a[4]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.rack", rack);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("reconnect.backoff.max.ms", "500");
        p.put("metadata.max.age.ms", "3000");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, 0);
        String pref = "";
        try (PrintWriter w = new PrintWriter(new OutputStreamWriter(
                 new FileOutputStream(a[3], true), StandardCharsets.UTF_8), true);
             KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (!stop.exists()) {
                try {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        w.println("{\"t\":\"rec\",\"o\":" + r.offset() + ",\"e\":" + r.leaderEpoch().orElse(-1)
                                  + ",\"v\":\"" + new String(r.value(), StandardCharsets.UTF_8) + "\"}");
                    }
                } catch (Exception e) {
                    w.println("{\"t\":\"err\",\"msg\":\"" + String.valueOf(e).replace('"', '\'') + "\"}");
                }
                for (Map.Entry<MetricName, ? extends Metric> m : c.metrics().entrySet()) {
                    if (m.getKey().name().equals("preferred-read-replica")
                        && topic.equals(m.getKey().tags().get("topic"))) {
                        String v = String.valueOf(m.getValue().metricValue());
                        if (!v.equals(pref)) {
                            pref = v;
                            w.println("{\"t\":\"pref\",\"v\":\"" + v + "\"}");
                        }
                    }
                }
            }
        }
    }
}
