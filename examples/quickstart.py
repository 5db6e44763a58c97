from oracleagentmemory.core import OracleAgentMemory

with OracleAgentMemory(connection="memory.db") as memory:  # an embedded SQLite file
    thread = memory.create_thread(user_id="alice", agent_id="concierge")
    thread.add_messages([{"role": "user", "content": "Book me a table for Friday."}])
    thread.add_memory("Alice is allergic to peanuts.", memory_type="fact")
    hits = memory.search("food allergies", user_id="alice", record_types=["fact"])
    print(hits[0].content)  # prints: Alice is allergic to peanuts.
    card = thread.get_context_card()  # the memories a prompt needs, as one block of text
    print("peanuts" in card.content)  # prints: True
