// ScenarioRunner: plain JMS 1.1 programs on ActiveMQ's Java client, one JVM per broker.
//
// Theory of operation: started as `java ScenarioRunner URL DLQ` (URL as an application
// gives it to ActiveMQConnectionFactory, DLQ the name of the queue the broker dead-letters
// into: ActiveMQ.DLQ on ActiveMQ, DLQ on ternmq), it reads one scenario per stdin line
// ("NAME [ARG...]") and prints one JSON line per scenario:
//   {"scenario": NAME, "ok": true, "received": ...}    or
//   {"scenario": NAME, "ok": false, "error": "Class: message", "received": ...}
// "received" is what the JMS API handed the program (bodies, headers, typed property
// values as "Type:value"); the Python test compares it with what JMS says it must be, the
// same expectation for every broker. Every scenario opens its own connections (closed in a
// finally) and uses destination names of its own (scenario name + run id + counter), so
// scenarios do not see each other's messages and a failed one leaves the next unharmed.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageEOFException;
import javax.jms.MessageFormatException;
import javax.jms.MessageProducer;
import javax.jms.ObjectMessage;
import javax.jms.Queue;
import javax.jms.QueueBrowser;
import javax.jms.Session;
import javax.jms.StreamMessage;
import javax.jms.TemporaryQueue;
import javax.jms.TemporaryTopic;
import javax.jms.TextMessage;
import javax.jms.Topic;
import javax.jms.TopicSubscriber;

import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.RedeliveryPolicy;

public final class ScenarioRunner {
    static final long WAIT = 10_000; // a message that must come
    static final long NONE = 1_000; // how long "no further message" is watched for
    static final String RUN = Long.toHexString(System.nanoTime());
    static final String TEXT = "h\u00e9llo \u2603 \uD83D\uDE00 end";
    // Map entries and properties: ActiveMQ's client reads their strings as standard UTF-8
    // (hawtbuf's UTF8Buffer), so astral characters do not survive even between two Java
    // clients on ActiveMQ's broker.
    static final String BMP_TEXT = "h\u00e9llo \u2603 end";

    final String url;
    final String dlq;
    final List<Connection> open = new ArrayList<>();
    String scenario = "";
    int counter;

    ScenarioRunner(String url, String dlq) {
        this.url = url;
        this.dlq = dlq;
    }

    public static void main(String[] args) throws Exception {
        ScenarioRunner runner = new ScenarioRunner(args[0], args.length > 1 ? args[1] : "ActiveMQ.DLQ");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            line = line.trim();
            if (!line.isEmpty()) {
                out.println(runner.run(line.split("\\s+")));
            }
        }
    }

    String run(String[] words) {
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("scenario", words[0]);
        AtomicReference<Object> received = new AtomicReference<>();
        scenario = words[0];
        try {
            received.set(dispatch(words[0], Arrays.copyOfRange(words, 1, words.length)));
            result.put("ok", true);
        } catch (Throwable e) {
            result.put("ok", false);
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            result.put("error", e.getClass().getName() + ": " + e.getMessage());
            result.put("trace", trace.toString());
        } finally {
            for (Connection c : open) {
                try {
                    c.close();
                } catch (Throwable e) {
                    result.putIfAbsent("close_error", String.valueOf(e));
                }
            }
            open.clear();
        }
        result.put("received", received.get());
        return Json.write(result);
    }

    Object dispatch(String name, String[] args) throws Exception {
        switch (name) {
            case "queue": return queue();
            case "topic": return topic();
            case "durable": return durable();
            case "selectors": return selectors();
            case "client_ack_recover": return clientAckRecover();
            case "dups_ok": return dupsOk();
            case "transacted": return transacted();
            case "temp_queue_request_reply": return tempRequestReply(false);
            case "temp_topic_request_reply": return tempRequestReply(true);
            case "listener": return listener();
            case "body_types": return bodyTypes();
            case "priority": return priority();
            case "expiry": return expiry();
            case "persistence": return persistence();
            case "browser": return browser();
            case "dlq": return deadLetter();
            case "spring": return spring();
            case "send_typed": return sendTyped(args[0]);
            case "receive_typed": return receiveTyped(args[0]);
            default: throw new IllegalArgumentException("no scenario " + name);
        }
    }

    // ---- helpers ------------------------------------------------------------------------

    ActiveMQConnectionFactory factory() {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url);
        RedeliveryPolicy policy = f.getRedeliveryPolicy();
        policy.setInitialRedeliveryDelay(0);
        policy.setRedeliveryDelay(0);
        f.setMessagePrioritySupported(true);
        f.setTrustedPackages(Arrays.asList("java.lang", "java.util")); // ObjectMessage bodies
        return f;
    }

    Connection connect(String clientId) throws Exception {
        Connection c = factory().createConnection();
        open.add(c);
        if (clientId != null) {
            c.setClientID(clientId);
        }
        c.start();
        return c;
    }

    Connection connect() throws Exception {
        return connect(null);
    }

    String fresh(String what) {
        return "ow." + scenario + "." + what + "." + RUN + "." + (++counter);
    }

    static String text(Message m) throws Exception {
        if (m == null) {
            return null;
        }
        return ((TextMessage) m).getText();
    }

    static List<String> drain(MessageConsumer consumer) throws Exception {
        List<String> out = new ArrayList<>();
        for (Message m = consumer.receive(NONE); m != null; m = consumer.receive(NONE)) {
            out.add(text(m));
        }
        return out;
    }

    static String delivery(Message m) throws Exception {
        if (m == null) {
            return null;
        }
        return text(m) + "|" + m.getJMSRedelivered() + "|" + m.getIntProperty("JMSXDeliveryCount");
    }

    /** "Type:value" of a value as Java sees it; byte arrays in hex. */
    static String typed(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof byte[]) {
            StringBuilder hex = new StringBuilder("byte[]:");
            for (byte b : (byte[]) v) {
                hex.append(String.format("%02x", b));
            }
            return hex.toString();
        }
        return v.getClass().getSimpleName() + ":" + v;
    }

    static final Object[] PRIMITIVES = {
        true, (byte) -5, (short) 300, 'Z', 70000, 1L << 40, 1.5f, -2.25, TEXT, new byte[] {1, 2, (byte) 0xff},
    };

    static final String[] PROPS = {"pBoolean", "pByte", "pShort", "pInt", "pLong", "pFloat", "pDouble", "pString"};

    static void setTypedProperties(Message m) throws Exception {
        m.setBooleanProperty("pBoolean", true);
        m.setByteProperty("pByte", (byte) -5);
        m.setShortProperty("pShort", (short) 300);
        m.setIntProperty("pInt", 70000);
        m.setLongProperty("pLong", 1L << 40);
        m.setFloatProperty("pFloat", 1.5f);
        m.setDoubleProperty("pDouble", -2.25);
        m.setStringProperty("pString", "42");
    }

    interface Getter {
        Object get(Message m, String name) throws Exception;
    }

    static final String[] GETTER_NAMES = {"boolean", "byte", "short", "int", "long", "float", "double", "String", "Object"};
    static final Getter[] GETTERS = {
        Message::getBooleanProperty, Message::getByteProperty, Message::getShortProperty,
        Message::getIntProperty, Message::getLongProperty, Message::getFloatProperty,
        Message::getDoubleProperty, Message::getStringProperty, (m, n) -> typed(m.getObjectProperty(n)),
    };

    /** Every getter on every typed property: the value read, or the exception it raised. */
    static Map<String, Object> getterMatrix(Message m) {
        Map<String, Object> out = new TreeMap<>();
        for (String prop : PROPS) {
            Map<String, Object> row = new LinkedHashMap<>();
            for (int i = 0; i < GETTERS.length; i++) {
                try {
                    row.put(GETTER_NAMES[i], String.valueOf(GETTERS[i].get(m, prop)));
                } catch (MessageFormatException e) {
                    row.put(GETTER_NAMES[i], "MessageFormatException");
                } catch (Exception e) {
                    row.put(GETTER_NAMES[i], e.getClass().getSimpleName());
                }
            }
            out.put(prop, row);
        }
        return out;
    }

    // ---- scenarios ----------------------------------------------------------------------

    Object queue() throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        for (int i = 0; i < 3; i++) {
            p.send(s.createTextMessage("m" + i));
        }
        MessageConsumer c = s.createConsumer(q);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            out.add(text(c.receive(WAIT)));
        }
        out.add(text(c.receive(NONE)));
        return out;
    }

    Object topic() throws Exception {
        Connection conn = connect();
        Session s1 = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Session s2 = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic t = s1.createTopic(fresh("t"));
        MessageConsumer c1 = s1.createConsumer(t);
        MessageConsumer c2 = s2.createConsumer(t);
        Session ps = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = ps.createProducer(t);
        p.send(ps.createTextMessage("a"));
        p.send(ps.createTextMessage("b"));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("s1", Arrays.asList(text(c1.receive(WAIT)), text(c1.receive(WAIT)), text(c1.receive(NONE))));
        out.put("s2", Arrays.asList(text(c2.receive(WAIT)), text(c2.receive(WAIT)), text(c2.receive(NONE))));
        return out;
    }

    Object durable() throws Exception {
        Connection conn = connect(fresh("client"));
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic t = s.createTopic(fresh("t"));
        MessageProducer p = s.createProducer(t);
        TopicSubscriber d = s.createDurableSubscriber(t, "sub");
        d.close();
        p.send(s.createTextMessage("while offline"));
        Map<String, Object> out = new LinkedHashMap<>();
        d = s.createDurableSubscriber(t, "sub");
        out.put("while_offline", text(d.receive(WAIT)));
        d.close();
        p.send(s.createTextMessage("offline again"));
        s.unsubscribe("sub");
        p.send(s.createTextMessage("after unsubscribe"));
        d = s.createDurableSubscriber(t, "sub");
        out.put("after_unsubscribe", text(d.receive(NONE)));
        d.close();
        s.unsubscribe("sub");
        return out;
    }

    static final String[] SELECTORS = {
        "n > 2",
        "color = 'red' AND n < 4",
        "flag = TRUE",
        "price BETWEEN 2.0 AND 6.0",
        "big >= 30000000000",
        "color IN ('blue') OR n = 0",
        "b <> 1 AND sh < 3 AND f > 0.2",
        "color LIKE 'r%'",
        "nosuch IS NULL AND n = 1",
        "JMSPriority = 4 AND JMSType = 'kind2'",
    };

    Object selectors() throws Exception {
        Connection conn = connect();
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic t = s.createTopic(fresh("t"));
        Map<String, List<String>> got = new LinkedHashMap<>();
        AtomicLong last = new AtomicLong(System.nanoTime());
        for (String selector : SELECTORS) {
            List<String> into = Collections.synchronizedList(new ArrayList<>());
            got.put(selector, into);
            conn.createSession(false, Session.AUTO_ACKNOWLEDGE).createConsumer(t, selector).setMessageListener(m -> {
                try {
                    into.add(text(m));
                } catch (Exception e) {
                    into.add(String.valueOf(e));
                }
                last.set(System.nanoTime());
            });
        }
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(null);
        for (int i = 0; i < 6; i++) {
            Message m = s.createTextMessage("m" + i);
            m.setIntProperty("n", i);
            m.setStringProperty("color", i % 2 == 0 ? "red" : "blue");
            m.setBooleanProperty("flag", i % 3 == 0);
            m.setDoubleProperty("price", i * 1.5);
            m.setLongProperty("big", i * 10_000_000_000L);
            m.setByteProperty("b", (byte) i);
            m.setShortProperty("sh", (short) i);
            m.setFloatProperty("f", i * 0.25f);
            m.setJMSType("kind" + i);
            p.send(t, m);
            p.send(q, m);
        }
        long quiet = TimeUnit.MILLISECONDS.toNanos(NONE);
        while (System.nanoTime() - last.get() < quiet) {
            Thread.sleep(50);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", got);
        // On a queue a selector leaves what it does not match for other consumers.
        MessageConsumer blue = s.createConsumer(q, "color = 'blue'");
        List<String> blues = drain(blue);
        blue.close();
        out.put("queue_blue", blues);
        out.put("queue_rest", drain(s.createConsumer(q)));
        return out;
    }

    Object clientAckRecover() throws Exception {
        Connection conn = connect();
        Session s = conn.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        p.send(s.createTextMessage("m0"));
        p.send(s.createTextMessage("m1"));
        MessageConsumer c = s.createConsumer(q);
        List<String> out = new ArrayList<>();
        out.add(delivery(c.receive(WAIT)));
        out.add(delivery(c.receive(WAIT)));
        s.recover();
        out.add(delivery(c.receive(WAIT)));
        Message last = c.receive(WAIT);
        out.add(delivery(last));
        last.acknowledge();
        c.close();
        Session again = conn.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        out.add(delivery(again.createConsumer(q).receive(NONE)));
        return out;
    }

    Object dupsOk() throws Exception {
        Connection conn = connect();
        Session s = conn.createSession(false, Session.DUPS_OK_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        for (int i = 0; i < 5; i++) {
            p.send(s.createTextMessage("m" + i));
        }
        MessageConsumer c = s.createConsumer(q);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            out.add(text(c.receive(WAIT)));
        }
        s.close();
        Session again = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("received", out);
        result.put("left", drain(again.createConsumer(q)));
        return result;
    }

    Object transacted() throws Exception {
        Connection conn = connect();
        Session ps = conn.createSession(true, Session.SESSION_TRANSACTED);
        Session cs = conn.createSession(true, Session.SESSION_TRANSACTED);
        Queue q = ps.createQueue(fresh("q"));
        MessageProducer p = ps.createProducer(q);
        MessageConsumer c = cs.createConsumer(q);
        Map<String, Object> out = new LinkedHashMap<>();
        p.send(ps.createTextMessage("rolled back"));
        out.put("before_commit", delivery(c.receive(NONE)));
        ps.rollback();
        p.send(ps.createTextMessage("c1"));
        p.send(ps.createTextMessage("c2"));
        ps.commit();
        List<String> got = new ArrayList<>();
        got.add(delivery(c.receive(WAIT)));
        cs.rollback();
        got.add(delivery(c.receive(WAIT)));
        got.add(delivery(c.receive(WAIT)));
        cs.commit();
        got.add(delivery(c.receive(NONE)));
        out.put("consumed", got);
        c.close();
        out.put("left_after_commit", drain(conn.createSession(false, Session.AUTO_ACKNOWLEDGE).createConsumer(q)));
        return out;
    }

    /** A request with JMSReplyTo a temporary queue (or topic), answered by a replier of its own. */
    Object tempRequestReply(boolean topic) throws Exception {
        Connection conn = connect();
        String requests = fresh("requests");
        AtomicReference<String> seen = new AtomicReference<>();
        CountDownLatch replierReady = new CountDownLatch(1);
        Connection replierConnection = connect(); // a service of its own, as in an application
        Thread replier = new Thread(() -> {
            try {
                Session rs = replierConnection.createSession(false, Session.AUTO_ACKNOWLEDGE);
                MessageConsumer rc = rs.createConsumer(rs.createQueue(requests));
                MessageProducer rp = rs.createProducer(null);
                replierReady.countDown();
                Message request = rc.receive(WAIT);
                Destination replyTo = request.getJMSReplyTo();
                boolean temporary = topic ? replyTo instanceof TemporaryTopic : replyTo instanceof TemporaryQueue;
                seen.set(temporary + "|" + text(request));
                TextMessage reply = rs.createTextMessage("echo:" + text(request));
                reply.setJMSCorrelationID(request.getJMSMessageID());
                rp.send(replyTo, reply);
            } catch (Exception e) {
                seen.set(String.valueOf(e));
                replierReady.countDown();
            }
        }, "replier");
        replier.start();
        replierReady.await(WAIT, TimeUnit.MILLISECONDS);
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Destination replies = topic ? s.createTemporaryTopic() : s.createTemporaryQueue();
        MessageConsumer rc = s.createConsumer(replies);
        TextMessage request = s.createTextMessage("ping");
        request.setJMSReplyTo(replies);
        s.createProducer(s.createQueue(requests)).send(request);
        Message reply = rc.receive(WAIT);
        replier.join(WAIT);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("replier_saw", seen.get());
        out.put("reply", text(reply));
        out.put("correlated", reply != null && request.getJMSMessageID().equals(reply.getJMSCorrelationID()));
        rc.close();
        if (topic) {
            ((TemporaryTopic) replies).delete();
        } else {
            ((TemporaryQueue) replies).delete();
        }
        return out;
    }

    Object listener() throws Exception {
        Connection conn = connect();
        Session s = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch three = new CountDownLatch(3);
        Session ls = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        ls.createConsumer(q).setMessageListener(m -> {
            try {
                got.add(text(m) + "|" + Thread.currentThread().getName().startsWith("ActiveMQ Session Task"));
            } catch (Exception e) {
                got.add(String.valueOf(e));
            }
            three.countDown();
        });
        MessageProducer p = s.createProducer(q);
        for (int i = 0; i < 3; i++) {
            p.send(s.createTextMessage("l" + i));
        }
        three.await(WAIT, TimeUnit.MILLISECONDS);
        synchronized (got) {
            return new ArrayList<>(got);
        }
    }

    Object bodyTypes() throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        List<Message> sent = new ArrayList<>();
        sent.add(s.createTextMessage(TEXT));
        // Each primitive once, written through writeObject / setObject, which pick the typed
        // writer (writeBoolean, writeByte, ... writeUTF for a String in a BytesMessage).
        BytesMessage bytes = s.createBytesMessage();
        MapMessage map = s.createMapMessage();
        StreamMessage stream = s.createStreamMessage();
        for (Object value : PRIMITIVES) {
            bytes.writeObject(value);
            stream.writeObject(value);
            String kind = value instanceof byte[] ? "bytes" : value.getClass().getSimpleName();
            map.setObject(kind, value instanceof String ? BMP_TEXT : value);
        }
        sent.add(bytes);
        sent.add(map);
        sent.add(stream);
        HashMap<String, Object> object = new HashMap<>();
        object.put("a", 1);
        object.put("b", "two");
        sent.add(s.createObjectMessage(object));
        sent.add(s.createMessage());
        for (Message m : sent) {
            setTypedProperties(m);
            p.send(m);
        }
        MessageConsumer c = s.createConsumer(q);
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < sent.size(); i++) {
            out.add(describe(c.receive(WAIT)));
        }
        return out;
    }

    static Map<String, Object> describe(Message m) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        if (m == null) {
            out.put("kind", null);
            return out;
        }
        if (m instanceof TextMessage) {
            out.put("kind", "text");
            out.put("body", ((TextMessage) m).getText());
        } else if (m instanceof BytesMessage) {
            BytesMessage b = (BytesMessage) m;
            out.put("kind", "bytes");
            out.put("length", b.getBodyLength());
            byte[] tail = new byte[3];
            out.put("body", Arrays.asList(b.readBoolean(), b.readByte(), b.readShort(), String.valueOf(b.readChar()),
                    b.readInt(), b.readLong(), String.valueOf(b.readFloat()), String.valueOf(b.readDouble()),
                    b.readUTF(), b.readBytes(tail), typed(tail), b.readBytes(tail)));
        } else if (m instanceof MapMessage) {
            MapMessage mm = (MapMessage) m;
            out.put("kind", "map");
            Map<String, Object> body = new TreeMap<>();
            for (Enumeration<?> e = mm.getMapNames(); e.hasMoreElements();) {
                String name = (String) e.nextElement();
                body.put(name, typed(mm.getObject(name)));
            }
            out.put("body", body);
        } else if (m instanceof StreamMessage) {
            StreamMessage sm = (StreamMessage) m;
            out.put("kind", "stream");
            List<Object> body = new ArrayList<>();
            try {
                for (int i = 0; i < 20; i++) {
                    body.add(typed(sm.readObject()));
                }
            } catch (MessageEOFException end) {
                body.add("EOF");
            }
            out.put("body", body);
        } else if (m instanceof ObjectMessage) {
            out.put("kind", "object");
            out.put("body", typed(new TreeMap<>((Map<?, ?>) ((ObjectMessage) m).getObject())));
        } else {
            out.put("kind", "message");
        }
        out.put("properties", getterMatrix(m));
        return out;
    }

    Object priority() throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        for (int prio : new int[] {3, 9, 0, 5, 7, 1, 8, 2, 6, 4}) {
            p.send(s.createTextMessage("p" + prio), DeliveryMode.PERSISTENT, prio, 0);
        }
        MessageConsumer c = s.createConsumer(q);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            Message m = c.receive(WAIT);
            out.add(m == null ? null : text(m) + "|" + m.getJMSPriority());
        }
        return out;
    }

    Object expiry() throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        p.send(s.createTextMessage("short-lived"), DeliveryMode.PERSISTENT, 4, 200);
        p.send(s.createTextMessage("long-lived"), DeliveryMode.PERSISTENT, 4, 0);
        Thread.sleep(1_000);
        MessageConsumer c = s.createConsumer(q);
        Message m = c.receive(WAIT);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", text(m));
        out.put("expiration", m == null ? null : m.getJMSExpiration());
        out.put("after", text(c.receive(NONE)));
        return out;
    }

    Object persistence() throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        p.send(s.createTextMessage("persistent"), DeliveryMode.PERSISTENT, 4, 0);
        p.setDeliveryMode(DeliveryMode.NON_PERSISTENT);
        p.send(s.createTextMessage("non-persistent"));
        MessageConsumer c = s.createConsumer(q);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Message m = c.receive(WAIT);
            out.add(m == null ? null : text(m) + "|" + (m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT));
        }
        return out;
    }

    Object browser() throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue q = s.createQueue(fresh("q"));
        MessageProducer p = s.createProducer(q);
        for (int i = 0; i < 3; i++) {
            Message m = s.createTextMessage("b" + i);
            m.setIntProperty("i", i);
            p.send(m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("all", browse(s.createBrowser(q)));
        out.put("selected", browse(s.createBrowser(q, "i >= 1")));
        out.put("consumed", drain(s.createConsumer(q)));
        out.put("after", browse(s.createBrowser(q)));
        return out;
    }

    static List<String> browse(QueueBrowser browser) throws Exception {
        List<String> out = new ArrayList<>();
        for (Enumeration<?> e = browser.getEnumeration(); e.hasMoreElements();) {
            out.add(text((Message) e.nextElement()));
        }
        browser.close();
        return out;
    }

    Object deadLetter() throws Exception {
        ActiveMQConnectionFactory f = factory();
        f.getRedeliveryPolicy().setMaximumRedeliveries(2);
        Connection conn = f.createConnection();
        open.add(conn);
        conn.start();
        Session s = conn.createSession(true, Session.SESSION_TRANSACTED);
        Queue q = s.createQueue(fresh("q"));
        String tag = fresh("tag");
        Message poison = s.createTextMessage("poison");
        poison.setStringProperty("tag", tag);
        s.createProducer(q).send(poison);
        s.commit();
        MessageConsumer c = s.createConsumer(q);
        List<String> deliveries = new ArrayList<>();
        for (Message m = c.receive(WAIT); m != null; m = c.receive(NONE)) {
            deliveries.add(delivery(m));
            s.rollback();
        }
        c.close();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("deliveries", deliveries);
        Session ds = conn.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer dc = ds.createConsumer(ds.createQueue(dlq), "tag = '" + tag + "'");
        out.put("dead_letter", text(dc.receive(WAIT)));
        out.put("left_in_queue", drain(ds.createConsumer(q)));
        return out;
    }

    Object spring() throws Exception {
        Class<?> scenarioClass = Class.forName("SpringScenario");
        Method run = scenarioClass.getMethod("run", ActiveMQConnectionFactory.class, String.class);
        return run.invoke(null, factory(), fresh("q"));
    }

    /** A Java producer for a Python consumer: a text and a map message, typed properties. */
    Object sendTyped(String queue) throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageProducer p = s.createProducer(s.createQueue(queue));
        TextMessage t = s.createTextMessage(TEXT);
        setTypedProperties(t);
        t.setJMSCorrelationID("corr-java");
        t.setJMSType("from-java");
        p.send(t);
        MapMessage m = s.createMapMessage();
        setTypedProperties(m);
        m.setInt("count", 3);
        m.setString("name", "widget");
        m.setDouble("price", 9.99);
        m.setBoolean("ok", true);
        p.send(m);
        return Arrays.asList(t.getJMSMessageID(), m.getJMSMessageID());
    }

    /** A Java consumer of what a Python producer sent (same shape as sendTyped). */
    Object receiveTyped(String queue) throws Exception {
        Session s = connect().createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer c = s.createConsumer(s.createQueue(queue));
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Message m = c.receive(WAIT);
            Map<String, Object> d = describe(m);
            if (m != null) {
                d.put("correlation_id", m.getJMSCorrelationID());
                d.put("type", m.getJMSType());
            }
            out.add(d);
        }
        return out;
    }

    /** The little JSON writer the result lines need (null, booleans, numbers, strings, maps, lists). */
    static final class Json {
        private Json() {}

        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(b, v);
            return b.toString();
        }

        private static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
                b.append(v);
            } else if (v instanceof Map) {
                b.append('{');
                String sep = "";
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    b.append(sep);
                    string(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                    sep = ",";
                }
                b.append('}');
            } else if (v instanceof List) {
                b.append('[');
                String sep = "";
                for (Object item : (List<?>) v) {
                    b.append(sep);
                    write(b, item);
                    sep = ",";
                }
                b.append(']');
            } else {
                string(b, String.valueOf(v));
            }
        }

        private static void string(StringBuilder b, String s) {
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                char ch = s.charAt(i);
                if (ch == '"' || ch == '\\') {
                    b.append('\\').append(ch);
                } else if (ch < 0x20 || ch > 0x7e) {
                    b.append(String.format("\\u%04x", (int) ch));
                } else {
                    b.append(ch);
                }
            }
            b.append('"');
        }
    }
}
