// An MCP client built with the TypeScript SDK, driving `overseer mcp` over
// stdio for the gateway's end-to-end test. It prints one JSON line per
// step; before retrying the held write it waits for a line on stdin (the
// test approves the call in between).
//
// Environment: MCP_SDK_DIR (the installed @modelcontextprotocol/sdk),
// OVERSEER_BIN, OVERSEER_HOME, READ_PATH, WRITE_PATH.
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { createInterface } from "node:readline";

const sdk = process.env.MCP_SDK_DIR;
const { Client } = await import(pathToFileURL(join(sdk, "dist/esm/client/index.js")).href);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "dist/esm/client/stdio.js")).href);

const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const textOf = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

const stdin = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => stdin.once("line", resolve));

try {
  const transport = new StdioClientTransport({
    command: process.env.OVERSEER_BIN,
    args: ["--home", process.env.OVERSEER_HOME, "mcp"],
    env: { ...process.env },
    stderr: "inherit",
  });
  const client = new Client({ name: "ts-e2e", version: "1.0.0" });
  await client.connect(transport);

  const { tools } = await client.listTools();
  say({ step: "tools", names: tools.map((t) => t.name) });

  let res = await client.callTool({ name: "fs__read_text_file", arguments: { path: process.env.READ_PATH } });
  say({ step: "read", isError: !!res.isError, text: textOf(res) });

  const write = { name: "fs__write_file", arguments: { path: process.env.WRITE_PATH, content: "from the TypeScript client" } };
  res = await client.callTool(write);
  say({ step: "write1", isError: !!res.isError, text: textOf(res) });

  await nextLine();
  res = await client.callTool(write);
  say({ step: "write2", isError: !!res.isError, text: textOf(res) });

  await client.close();
  say({ step: "done" });
  stdin.close();
} catch (err) {
  say({ step: "error", error: String(err && err.stack || err) });
  process.exit(1);
}
