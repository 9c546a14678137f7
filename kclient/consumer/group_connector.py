"""GroupConsumerConnector: placeholder, written next."""
from .connector import ConsumerConnector


class GroupConsumerConnector(ConsumerConnector):
    pass
