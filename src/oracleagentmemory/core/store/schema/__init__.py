"""What the store's tables hold: creating and upgrading the tables (``_schema``), the row
types a record is stored as (``_rows``), planning a batch of records into rows
(``_planning``) and the parts of a message record (``_message_parts``). Engine-neutral; it
imports no other part of the store but the core at its top (``core.store``)."""
