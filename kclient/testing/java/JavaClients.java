// The Java producer and consumer with their defaults, driven by kclient's tests
// (compiled at test time by kclient.testing.java_tools; nothing here is shipped code).
//
//   produce BOOTSTRAP TOPIC COUNT            keyed records "k<i>" -> "v<i>"; prints "partition offset"
//   consume BOOTSTRAP TOPIC GROUP COUNT      subscribe, poll until COUNT records (or 60 s),
//                                            commitSync; prints "partition offset key value"
//   member BOOTSTRAP TOPIC GROUP STRATEGY [INSTANCE_ID]
//                                            a group member with partition.assignment.strategy
//                                            STRATEGY (e.g. the CooperativeStickyAssignor class;
//                                            "consumer": group.protocol=consumer, KIP-848)
//                                            until stdin closes; commitSync after each poll;
//                                            prints "assigned P,..", "revoked P,..", "lost P,..",
//                                            "record PARTITION OFFSET VALUE", "generation G"
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClients {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("produce")) {
            produce(args[1], args[2], Integer.parseInt(args[3]));
        } else if (args[0].equals("consume")) {
            consume(args[1], args[2], args[3], Integer.parseInt(args[4]));
        } else if (args[0].equals("member")) {
            member(args[1], args[2], args[3], args[4], args.length > 5 ? args[5] : null);
        } else {
            throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void produce(String bootstrap, String topic, int count) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);       // everything else: the defaults
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
            }
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                System.out.println(m.partition() + " " + m.offset());
            }
        }
    }

    static void consume(String bootstrap, String topic, String group, int count) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        long deadline = System.currentTimeMillis() + 60_000;
        int seen = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println(r.partition() + " " + r.offset() + " " + r.key() + " "
                                       + r.value());
                    seen++;
                }
            }
            consumer.commitSync();
        }
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) {
            ps.add(tp.partition());
        }
        java.util.Collections.sort(ps);
        StringBuilder out = new StringBuilder();
        for (Integer p : ps) {
            out.append(out.length() > 0 ? "," : "").append(p);
        }
        return out.toString();
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void member(String bootstrap, String topic, String group, String strategy,
                       String instanceId) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        if (strategy.equals("consumer")) {
            // KIP-848: the broker assigns, its interval and session apply
            props.put("group.protocol", "consumer");
        } else {
            props.put("partition.assignment.strategy", strategy);
            props.put("session.timeout.ms", "10000");
            props.put("heartbeat.interval.ms", "300");
        }
        if (instanceId != null) {
            props.put("group.instance.id", instanceId);
        }
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        AtomicBoolean done = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // wait for EOF
                }
            } catch (java.io.IOException e) {
                // closed
            }
            done.set(true);
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                consumer.commitSync();
                say("revoked " + partitions(ps));
            }

            public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                say("assigned " + partitions(ps));
                say("generation " + consumer.groupMetadata().generationId());
            }

            public void onPartitionsLost(Collection<TopicPartition> ps) {
                say("lost " + partitions(ps));
            }
        });
        try {
            while (!done.get()) {
                boolean any = false;
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    say("record " + r.partition() + " " + r.offset() + " " + r.value());
                    any = true;
                }
                if (any) {
                    consumer.commitSync();
                }
            }
        } catch (WakeupException e) {
            // stdin closed
        }
        consumer.close();
        say("closed");
    }
}
