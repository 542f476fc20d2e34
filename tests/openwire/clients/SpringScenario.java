// SpringScenario: Spring's JmsTemplate over ActiveMQ's client, the way most Java JMS
// applications talk to a broker. Compiled only when Debian's Spring jars are there;
// ScenarioRunner loads it by name for the "spring" scenario.
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.springframework.jms.core.JmsTemplate;

public final class SpringScenario {
    private SpringScenario() {}

    /** convertAndSend / receiveAndConvert of a String and of a Map on queue QUEUE. */
    public static Object run(ActiveMQConnectionFactory factory, String queue) {
        JmsTemplate template = new JmsTemplate(factory);
        template.setReceiveTimeout(ScenarioRunner.WAIT);
        template.convertAndSend(queue, "hello from spring");
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("string", ScenarioRunner.typed(template.receiveAndConvert(queue)));
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("name", "widget");
        map.put("count", 3);
        map.put("price", 9.99);
        map.put("ok", true);
        template.convertAndSend(queue, map);
        Object back = template.receiveAndConvert(queue);
        Map<String, Object> typedBack = new TreeMap<>();
        if (back instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) back).entrySet()) {
                typedBack.put(String.valueOf(e.getKey()), ScenarioRunner.typed(e.getValue()));
            }
            out.put("map", typedBack);
        } else {
            out.put("map", ScenarioRunner.typed(back));
        }
        template.setReceiveTimeout(ScenarioRunner.NONE);
        out.put("nothing_left", template.receiveAndConvert(queue) == null);
        return out;
    }
}
