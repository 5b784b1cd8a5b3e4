"""tests/clients/kafka_python_admin.py: kafka-python 2.0.2 admin calls for golden capture.

Usage: /usr/bin/python3 kafka_python_admin.py PORT
Lists topics, describes the cluster and creates one topic, which makes
kafka-python send Metadata (all topics, and for the controller) and
CreateTopics.
"""
import sys

from kafka.admin import KafkaAdminClient, NewTopic

admin = KafkaAdminClient(bootstrap_servers="127.0.0.1:" + sys.argv[1],
                         client_id="kafka-python-admin-golden",
                         request_timeout_ms=10000)
print(admin.list_topics())
print(admin.describe_cluster())
admin.create_topics([NewTopic("golden-created", num_partitions=3, replication_factor=1,
                              topic_configs={"cleanup.policy": "compact"})],
                    timeout_ms=5000)
admin.close()
