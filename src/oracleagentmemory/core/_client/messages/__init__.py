"""How a thread's messages become records and come back: planning a batch of messages with
their retrieval windows (``_message_batch``), message text and parts (``_message_content``),
reading a thread's messages (``_thread_messages``), images and their size limits
(``_images``) and image captions (``_captions``). Private to the client (``core._client``)."""
