"""Run in Hermes' venv: load vaultmem through Hermes' own plugin loader into a MemoryManager and call
every hook the way Hermes 0.19.0 does; prints what each returned as JSON."""

import json
import sys

from agent.memory_manager import MemoryManager
from agent.memory_provider import MemoryProvider
from plugins.memory import discover_memory_providers, load_memory_provider

out = {"discovered": {name: available for name, _, available in discover_memory_providers()}}
provider = load_memory_provider("vaultmem")
out["is_memory_provider"] = isinstance(provider, MemoryProvider)
out["backup_paths_before_init"] = provider.backup_paths()
manager = MemoryManager()
manager.add_provider(provider)
manager.initialize_all("session-1", platform="cli", agent_context="primary", agent_identity="coder")
out["system_prompt"] = manager.build_system_prompt()
out["tools"] = sorted(s["name"] for s in manager.get_all_tool_schemas())
call = manager.handle_tool_call
out["remember"] = json.loads(call("vault_remember", {"content": "The staging server uses port 8443", "tags": ["ops"],
                                                     "lifecycle": "fact", "entity": "staging", "score": 7}))
out["recall"] = json.loads(call("vault_recall", {"query": "staging port", "limit": 3}))
out["ask"] = json.loads(call("vault_ask", {"question": "what port does staging use?"}))
out["bad_args"] = json.loads(call("vault_remember", {"content": ""}))
out["bad_limit"] = json.loads(call("vault_recall", {"query": "x", "limit": "lots"}))
manager.on_turn_start(1, "hello")
manager.sync_all("以后都用中文回答我", "好的")
manager.sync_all("hi, how are you?", "Fine, thanks!")
manager.sync_all("I prefer tabs over spaces", "Noted.")
manager.queue_prefetch_all("staging port")
manager.flush_pending(timeout=30)
out["prefetch"] = manager.prefetch_all("which port does the staging server use")
out["prefetch_trivial"] = manager.prefetch_all("ok")
ok = json.dumps({"success": True})
manager.notify_memory_tool_write(ok, {"action": "add", "target": "memory", "content": "Deploys go through ci.example.com"},
                                 build_metadata=lambda: {"session_id": "session-1", "execution_context": "foreground"})
manager.notify_memory_tool_write(ok, {"action": "add", "target": "user", "content": "User's editor is Helix"})
manager.notify_memory_tool_write(ok, {"action": "replace", "target": "user", "old_text": "editor is Helix",
                                      "content": "User switched from Helix to Zed as the main code editor"})
manager.notify_memory_tool_write(ok, {"action": "add", "target": "memory", "content": "Build cache lives in /var/cache/b"})
manager.notify_memory_tool_write(ok, {"action": "remove", "target": "memory", "old_text": "Build cache"})
manager.notify_memory_tool_write(json.dumps({"success": False}), {"action": "add", "target": "user", "content": "never"})
manager.on_session_switch("session-2", parent_session_id="session-1", reset=True)
out["pre_compress"] = manager.on_pre_compress([{"role": "user", "content": "old"}])
manager.on_delegation("task", "result", child_session_id="child")
manager.on_session_end([])
out["status"] = provider.recall_status()
out["config_schema"] = [f["key"] for f in provider.get_config_schema()]
provider.save_config({"budget": 300}, sys.argv[1])
out["backup_paths"] = provider.backup_paths()
manager.shutdown_all()

reader = load_memory_provider("vaultmem")
readonly = MemoryManager()
readonly.add_provider(reader)
readonly.initialize_all("cron-1", platform="cron", agent_context="cron", agent_identity="coder")
out["readonly_tools"] = sorted(s["name"] for s in readonly.get_all_tool_schemas())
out["readonly_remember"] = json.loads(readonly.handle_tool_call("vault_remember", {"content": "Remember: cron wrote this"}))
readonly.sync_all("Remember: the cron job said 2026-12-24", "ok")
readonly.notify_memory_tool_write(ok, {"action": "add", "target": "user", "content": "cron user fact"})
readonly.flush_pending(timeout=30)
out["readonly_prefetch"] = readonly.prefetch_all("staging port")
readonly.on_session_end([])
readonly.shutdown_all()
print(json.dumps(out, ensure_ascii=False))
