package kafkapg.connect;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * A source of `count` records per task: task t's record i has key "k(i % 50)", value "t-i" and
 * source offset {pos: i + 1} under the source partition {task: t}, so a task restarted elsewhere
 * resumes from what its last committed transaction recorded. `batch` records per poll, then a
 * 20 ms pause, so that the records keep flowing while check.py kills a worker.
 */
public class SeqSource extends SourceConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return Seq.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return Tasks.numbered(props, maxTasks);
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef()
                .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the topic written")
                .define("count", ConfigDef.Type.INT, 1000, ConfigDef.Importance.HIGH, "records per task")
                .define("batch", ConfigDef.Type.INT, 50, ConfigDef.Importance.LOW, "records per poll");
    }

    @Override
    public String version() {
        return "1";
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    public static class Seq extends SourceTask {
        private String topic;
        private String task;
        private int count;
        private int batch;
        private long pos;

        @Override
        public String version() {
            return "1";
        }

        @Override
        public void start(Map<String, String> props) {
            topic = props.get("topic");
            task = props.get("task.no");
            count = Integer.parseInt(props.getOrDefault("count", "1000"));
            batch = Integer.parseInt(props.getOrDefault("batch", "50"));
            Map<String, Object> committed = context.offsetStorageReader().offset(Collections.singletonMap("task", task));
            pos = committed == null ? 0 : ((Number) committed.get("pos")).longValue();
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            if (pos >= count) {
                Thread.sleep(200);
                return null;
            }
            List<SourceRecord> records = new ArrayList<>();
            for (int i = 0; i < batch && pos < count; i++, pos++) {
                records.add(new SourceRecord(Collections.singletonMap("task", task),
                        Collections.singletonMap("pos", pos + 1), topic, null,
                        Schema.STRING_SCHEMA, "k" + (pos % 50), Schema.STRING_SCHEMA, task + "-" + pos));
            }
            Thread.sleep(20);
            return records;
        }

        @Override
        public void stop() {
        }
    }
}
