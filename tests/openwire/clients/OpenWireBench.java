// OpenWireBench: one producer and one consumer on ActiveMQ's Java client, the throughput of
// a queue between them (benchmarks/bench_openwire_java.py runs it against ternmq and ActiveMQ).
//
// Theory of operation: `java OpenWireBench URL persistent|non-persistent COUNT SECONDS SIZE`
// starts a consumer (its own connection, AUTO_ACKNOWLEDGE, default prefetch) and a producer
// (its own connection) on a fresh queue, as two threads; the producer sends COUNT TextMessages
// of SIZE characters in the delivery mode (ActiveMQ's defaults: a persistent send waits for
// the broker's answer, a non-persistent one does not). A first round of COUNT/10 (at most
// 2,000) messages warms the JVM up and is not measured. The measured round stops at COUNT
// messages or after SECONDS, whichever comes first, and prints one line:
//   sent N received M seconds S rate R sending T
// with R = M / S, S from the first send to the last receive, and T the seconds the producer
// took for its sends (T well below S: the consumer's side is the bottleneck).
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.TextMessage;

import org.apache.activemq.ActiveMQConnectionFactory;

public final class OpenWireBench {
    private OpenWireBench() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        boolean persistent = args[1].equals("persistent");
        int count = Integer.parseInt(args[2]);
        long seconds = Long.parseLong(args[3]);
        String body = "x".repeat(Integer.parseInt(args[4]));
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url);
        String run = "bench." + Long.toHexString(System.nanoTime());
        round(factory, run + ".warm", persistent, Math.min(2_000, Math.max(1, count / 10)), seconds, body);
        long[] r = round(factory, run, persistent, count, seconds, body);
        double elapsed = r[2] / 1e9;
        System.out.printf("sent %d received %d seconds %.3f rate %.1f sending %.3f%n", r[0], r[1], elapsed,
                r[1] / elapsed, r[3] / 1e9);
    }

    /** One round: {sent, received, nanoseconds from the first send to the last receive,
     *  nanoseconds the sends took}. */
    static long[] round(ActiveMQConnectionFactory factory, String name, boolean persistent, int count,
            long seconds, String body) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Connection consumerConnection = factory.createConnection();
        Connection producerConnection = factory.createConnection();
        try {
            Session cs = consumerConnection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            Queue queue = cs.createQueue(name);
            MessageConsumer consumer = cs.createConsumer(queue);
            consumerConnection.start();
            AtomicInteger received = new AtomicInteger();
            AtomicLong lastReceive = new AtomicLong();
            AtomicInteger sent = new AtomicInteger();
            CountDownLatch done = new CountDownLatch(1);
            Thread reader = new Thread(() -> {
                try {
                    while (received.get() < count && System.nanoTime() < deadline) {
                        if (consumer.receive(200) != null) {
                            received.incrementAndGet();
                            lastReceive.set(System.nanoTime());
                        }
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                } finally {
                    done.countDown();
                }
            }, "consumer");
            reader.start();
            Session ps = producerConnection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer producer = ps.createProducer(queue);
            producer.setDeliveryMode(persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT);
            TextMessage message = ps.createTextMessage(body);
            long first = System.nanoTime();
            while (sent.get() < count && System.nanoTime() < deadline) {
                producer.send(message);
                sent.incrementAndGet();
            }
            long sending = System.nanoTime() - first;
            done.await();
            return new long[] {sent.get(), received.get(), Math.max(1, lastReceive.get() - first), sending};
        } finally {
            producerConnection.close();
            consumerConnection.close();
        }
    }
}
