"""Drives `lethe mcp` with the official Python MCP SDK, as an agent host would: every tool,
the schemas (enums, annotations), invalid arguments as readable tool errors, and every
structuredContent validated against the tool's outputSchema (jsonschema, the SDK's own
dependency).

Run: python -m unittest discover -s tests/mcp_python -v   (LETHE_BIN points at the binary)
"""
import asyncio
import datetime
import json
import os
import subprocess
import tempfile
import unittest

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

LETHE = os.environ.get("LETHE_BIN", os.path.join(os.path.dirname(__file__), "../../target/debug/lethe"))

TOOLS = {
    "remember", "recall", "forget", "restore", "pin", "unpin", "feedback", "get_memory",
    "get_meta_memory_stats", "add_reflection_note", "archive_observation", "restore_archive",
    "memory_stats", "list_memories", "similar", "end_session", "undo_forget_run",
}


def payload(result):
    return json.loads(result.content[0].text)


class LetheMcpTest(unittest.TestCase):
    def test_every_tool_through_the_python_sdk(self):
        asyncio.run(self.scenario())

    async def scenario(self):
        db = os.path.join(tempfile.mkdtemp(), "py.db")
        # The SDK passes only a few variables to the server; LETHE_MODEL_DIR must reach it.
        params = StdioServerParameters(command=LETHE, args=["--db", db, "mcp"], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                self.assertEqual(init.server_info.name, "lethe")
                self.assertEqual(init.protocol_version, "2025-11-25")
                tools = {t.name: t for t in (await s.list_tools()).tools}
                self.assertTrue(TOOLS <= set(tools), set(tools))
                for name, t in tools.items():
                    a = t.annotations
                    self.assertIsNotNone(a, name)
                    self.assertIsNotNone(a.title, name)
                    self.assertFalse(a.open_world_hint, name)
                    self.assertIsNotNone(t.output_schema, name)
                    self.assertIs(t.input_schema.get("additionalProperties"), False, name)
                self.assertEqual(tools["remember"].input_schema["properties"]["type"]["enum"],
                                 ["working", "episodic", "semantic", "procedural"])
                self.assertTrue(tools["recall"].annotations.read_only_hint)
                self.assertTrue(tools["forget"].annotations.destructive_hint)

                used = set()

                async def call(name, args):
                    used.add(name)
                    r = await s.call_tool(name, args)
                    self.assertFalse(r.is_error, (name, r.content))
                    jsonschema.validate(r.structured_content, tools[name].output_schema)
                    self.assertEqual(r.structured_content, payload(r))
                    return r.structured_content

                async def error(name, args):
                    r = await s.call_tool(name, args)
                    self.assertTrue(r.is_error, (name, args))
                    return payload(r)["error"]

                mid = (await call("remember", {"type": "procedural", "content": "Rotate the signing keys",
                                               "steps": ["generate", "publish", "retire"], "workflow_name": "keys"}))["id"]
                r = await call("recall", {"query": "signing keys"})
                self.assertEqual(r["results"][0]["id"], mid)
                self.assertIn("semantic", r["results"][0]["breakdown"])
                # A paraphrase is stored, and the answer names the memory it resembles.
                near = await call("remember", {"type": "procedural", "content": "Rotate signing keys",
                                               "steps": ["make new keys", "publish them"], "workflow_name": "keys"})
                self.assertTrue(near["stored"])
                self.assertIn(mid, [x["id"] for x in near["similar"]])
                self.assertEqual((await call("similar", {"memory_id": near["id"]}))["items"][0]["id"], mid)
                # A hard delete is the person's: an agent gets forbidden, confirmed or not.
                self.assertEqual((await error("forget", {"id": near["id"], "hard": True, "confirm": True}))["code"],
                                 "forbidden")
                self.assertEqual((await call("get_meta_memory_stats", {"memory_id": mid}))["recall_count"], 1)
                summary = await call("get_meta_memory_stats", {})
                self.assertEqual((summary["memories"], summary["total_recalls"], summary["never_recalled"]), (2, 1, 1))
                topic = await call("get_meta_memory_stats", {"query": "signing keys", "limit": 2})
                self.assertEqual((topic["memories"], topic["total_recalls"], topic["never_recalled"]), (2, 1, 1))
                self.assertEqual((await call("forget", {"id": mid}))["action"], "soft")
                self.assertFalse((await call("restore", {"id": mid}))["is_deleted"])
                self.assertTrue((await call("pin", {"id": mid}))["pinned"])
                self.assertEqual((await call("list_memories", {"pinned": True}))["items"][0]["id"], mid)
                self.assertFalse((await call("unpin", {"id": mid}))["pinned"])
                self.assertEqual((await call("feedback", {"memory_id": mid, "helpful": True}))["cite_count"], 1)
                self.assertEqual((await call("get_memory", {"id": mid}))["view_count"], 1)
                r = await call("add_reflection_note", {"memory_id": mid, "failure_type": "tool_error",
                                                       "failure_description": "publish step timed out"})
                self.assertEqual(r["notes"], 1)
                obs = await call("remember", {"type": "episodic", "source": "tool:bash",
                                              "content": "cargo build printed 300 lines of warnings"})
                a = await call("archive_observation", {"memory_id": obs["id"], "memo": "build warnings"})
                back = await call("restore_archive", {"archive_no": a["archive_no"]})
                self.assertEqual(back["content"], "cargo build printed 300 lines of warnings")
                self.assertEqual((await call("memory_stats", {}))["total_active"], 3)
                await call("remember", {"type": "working", "session_id": "py-s1",
                                        "content": "the publish step timed out twice"})
                end = await call("end_session", {"session_id": "py-s1", "task_kind": "release",
                                                 "rules": [{"content": "Publish with a 10 minute timeout"}]})
                self.assertEqual(len(end["task_logs"]), 1)
                hits = await call("recall", {"query": "publish step timed out", "task_kind": "release"})
                self.assertIn(end["task_logs"][0], [h["id"] for h in hits["results"]])
                # A forget run can be undone: a working note written three days ago (by the CLI,
                # which may back-date) is quarantined by the policy run, and undo_forget_run
                # brings it back.
                lethe = lambda *a: json.loads(subprocess.run([LETHE, "--db", db, *a], capture_output=True, check=True,
                                                             env=dict(os.environ)).stdout)
                before = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=3)).strftime(
                    "%Y-%m-%dT%H:%M:%S.000Z")
                scratch = lethe("remember", "--type", "working", "--content", "scratch: the staging port is 8081",
                                "--created-at", before)
                run = lethe("forget")
                self.assertIn(scratch["id"], run["working_gate"])
                undo = await call("undo_forget_run", {"run_id": run["run_id"]})
                self.assertIn(scratch["id"], [i["id"] for i in undo["restored"]])
                self.assertEqual(used, TOOLS, "every tool driven")

                self.assertEqual((await error("get_memory", {"id": "mem_missing"}))["code"], "not_found")
                # Bad arguments are tool results the model can read, not protocol errors.
                for args in [{"type": "semantic", "content": "x y", "colour": "blue"},
                             {"type": "semantik", "content": "x y"},
                             {"type": "semantic", "content": "x y", "importance": 2},
                             {"type": "semantic"}]:
                    e = await error("remember", args)
                    self.assertEqual(e["code"], "invalid_input", args)
                # 3 before the session's task log and its rule, and the scratch note the undo restored.
                self.assertEqual((await call("memory_stats", {}))["total_active"], 6, "nothing written")


if __name__ == "__main__":
    unittest.main()
