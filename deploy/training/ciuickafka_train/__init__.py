"""ciuickafka_train: feed PyTorch training from Kafka topics (CiuicKafka or any Kafka broker).

SampleWriter packs token samples into fixed-layout records and produces them;
TopicLoader reads them back as batches, sharded by rank and DataLoader worker
without consumer groups, with an exact, topology-free resume cursor and
starvation metrics. See deploy/training/README.md. Importing it starts nothing.
"""

from .errors import (BrokerUnreachable, CheckpointMismatch, OffsetsDeleted, TopicNotFound,  # noqa: F401
                     TrainReaderError, WriteError)
from .loader import Provenance, TopicLoader  # noqa: F401
from .records import decode_batch, decode_one, encode  # noqa: F401
from .writer import SampleWriter  # noqa: F401

__all__ = ["SampleWriter", "TopicLoader", "Provenance", "encode", "decode_one", "decode_batch",
           "TrainReaderError", "TopicNotFound", "BrokerUnreachable", "CheckpointMismatch", "OffsetsDeleted",
           "WriteError"]
