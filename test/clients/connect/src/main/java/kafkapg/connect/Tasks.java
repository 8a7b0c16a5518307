package kafkapg.connect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What both connectors give their tasks: the connector's settings, and each task its number. */
final class Tasks {
    private Tasks() {
    }

    static List<Map<String, String>> numbered(Map<String, String> props, int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int t = 0; t < maxTasks; t++) {
            Map<String, String> c = new HashMap<>(props);
            c.put("task.no", Integer.toString(t));
            configs.add(c);
        }
        return configs;
    }
}
