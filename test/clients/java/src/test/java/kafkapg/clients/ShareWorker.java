package kafkapg.clients;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A share consumer in a JVM of its own, for ShareGroupTest to kill -9: it acquires records with
 * explicit acknowledgement, prints "acquired VALUE" for each, and never acknowledges them.
 * Arguments: bootstrap topic group.
 */
public final class ShareWorker {
    private ShareWorker() {}

    public static void main(String[] args) throws Exception {
        Map<String, Object> m = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
                ConsumerConfig.GROUP_ID_CONFIG, args[2],
                "share.acknowledgement.mode", "explicit",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(m);
        c.subscribe(List.of(args[1]));
        while (true) {
            boolean any = false;
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                System.out.println("acquired " + Kit.str(r.value()));
                any = true;
            }
            System.out.flush();
            if (any) break;     // hold them: the next poll would need them acknowledged
        }
        Thread.sleep(Long.MAX_VALUE);
    }
}
