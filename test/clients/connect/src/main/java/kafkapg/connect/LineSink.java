package kafkapg.connect;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * A sink that appends "topic partition offset value" for each record to `file`.(task).(pid), a
 * file per task and worker process, flushed before Connect commits the task's offsets (so a record
 * whose offset was committed is in a file; one delivered again after a worker's death is there
 * twice: a sink is at least once).
 */
public class LineSink extends SinkConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return Lines.class;
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
        return new ConfigDef().define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "file name prefix");
    }

    @Override
    public String version() {
        return "1";
    }

    public static class Lines extends SinkTask {
        private Writer out;

        @Override
        public String version() {
            return "1";
        }

        @Override
        public void start(Map<String, String> props) {
            String name = props.get("file") + "." + props.get("task.no") + "." + ProcessHandle.current().pid();
            try {
                out = new OutputStreamWriter(new FileOutputStream(name, true), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void put(Collection<SinkRecord> records) {
            try {
                for (SinkRecord r : records) {
                    out.write(r.topic() + " " + r.kafkaPartition() + " " + r.kafkaOffset() + " " + r.value() + "\n");
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) {
            try {
                out.flush();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void stop() {
            try {
                out.close();
            } catch (IOException e) {
                // closing at the task's end: nothing left to lose
            }
        }
    }
}
