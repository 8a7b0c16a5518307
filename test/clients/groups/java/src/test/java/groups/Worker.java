package groups;

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

/** A member in its own JVM (for the kill test): prints "ASSIGNED p,p,..." whenever its assignment changes. */
public final class Worker {
    public static void main(String[] a) throws Exception {
        String group = a[0], topic = a[1], protocol = a[2];
        try (var c = new KafkaConsumer<String, String>(Kit.consumerProps(group, protocol))) {
            c.subscribe(List.of(topic));
            String last = null;
            while (true) {
                c.poll(Duration.ofMillis(100));
                String now = Kit.show(c.assignment());
                if (!now.equals(last)) {
                    System.out.println("ASSIGNED " + now);
                    System.out.flush();
                    last = now;
                }
            }
        }
    }
}
