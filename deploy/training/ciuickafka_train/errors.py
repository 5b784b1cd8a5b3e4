"""ciuickafka_train/errors.py: the errors a user can act on, and the topic check.

Each message names what is wrong and what to do. `check_topics` reads a
Metadata answer for ALL topics (never for a topic by name, which a broker may
answer by auto-creating it), so nothing here creates a topic.

Plain classes and a pure function: thread-safe.
"""


class TrainReaderError(RuntimeError):
    """Base of every error raised by ciuickafka_train."""


class TopicNotFound(TrainReaderError):
    pass


class BrokerUnreachable(TrainReaderError):
    pass


class CheckpointMismatch(TrainReaderError):
    pass


class OffsetsDeleted(TrainReaderError):
    pass


class WriteError(TrainReaderError):
    pass


def check_topics(md, topics, bootstrap):
    """Raises TopicNotFound for the first of `topics` absent from `md` (a
    ClusterMetadata of all topics); returns {topic: sorted partition ids}."""
    out = {}
    for t in topics:
        tm = md.topics.get(t)
        if tm is None or (tm.error is not None and tm.error.code() != 0) or not tm.partitions:
            raise TopicNotFound(
                "topic %r does not exist on %s (the reader never creates topics): create it first, e.g. "
                "`ciuickafka admin --bootstrap-server %s topics create %s --partitions 8`, or fix the name"
                % (t, bootstrap, bootstrap.split(",")[0], t))
        out[t] = sorted(tm.partitions)
    return out
