/**
 * volee's pi extension: reports pi's events to `volee hook` (pi has no hook commands).
 *
 * volee starts pi as `pi -e <this file> …` with VOLEE_HOOK_ARGV set to a JSON array: the argv
 * of `volee hook` (e.g. ["/usr/bin/python3", "-m", "volee_desktop.cli", "hook"]).  For each
 * event the extension runs that argv plus the event name, with a Claude-style JSON payload on
 * stdin: session_id, session_file, cwd, hook_event_name and the event's fields.
 *
 * Hooks must never slow or break pi: handlers do not wait for volee.  The calls are chained so
 * volee sees them in order; only session_shutdown waits for the chain (pi exits right after,
 * and a hook still running would be cut off).  Without VOLEE_HOOK_ARGV the extension does
 * nothing.
 */
import { spawn } from "node:child_process";
import { SettingsManager } from "@mariozechner/pi-coding-agent";

type Payload = Record<string, unknown>;

const HOOK_ARGV: string[] = (() => {
  try {
    const parsed: unknown = JSON.parse(process.env.VOLEE_HOOK_ARGV ?? "");
    return Array.isArray(parsed) && parsed.every((p) => typeof p === "string") ? parsed : [];
  } catch {
    return [];
  }
})();

// A signal pi got: a quit that follows one was not the person's own /quit or Ctrl+D.  Only
// listened to where pi itself handles the signal (a listener would otherwise cancel the
// default action, and pi would no longer die of it).
let signalled: string | null = null;
let watching = false;
function watchSignals(): void {
  if (watching) return;
  watching = true;
  for (const sig of ["SIGTERM", "SIGHUP"] as const) {
    if (process.listenerCount(sig) > 0) {
      process.on(sig, () => {
        signalled ??= sig;
      });
    }
  }
}

let chain: Promise<void> = Promise.resolve();

// pi ends a turn on an API error (a 429, a 529) with agent_end, then retries it by itself
// (auto-retry: up to retry.maxRetries more turns, each ending with agent_end): volee is told
// how many turns of this prompt ended on an error in a row and how many retries pi makes, so
// it can tell a retry from the end (docs/limits.md).
let errorsInARow = 0;

function maxRetries(cwd: string): number {
  try {
    const retry = SettingsManager.create(cwd).getRetrySettings();
    return retry.enabled ? retry.maxRetries : 0;
  } catch {
    return 3; // pi's default
  }
}

function lastAssistant(messages: unknown): any {
  if (!Array.isArray(messages)) return undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === "assistant") return messages[i];
  }
  return undefined;
}

function run(event: string, payload: Payload): Promise<void> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(HOOK_ARGV[0], [...HOOK_ARGV.slice(1), event], {
        stdio: ["pipe", "ignore", "ignore"],
        env: process.env,
      });
    } catch {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
    }, 10_000);
    child.on("error", () => {
      clearTimeout(timer);
      resolve();
    });
    child.on("close", () => {
      clearTimeout(timer);
      resolve();
    });
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(JSON.stringify(payload));
  });
}

function report(event: string, ctx: any, fields: Payload = {}): Promise<void> {
  if (HOOK_ARGV.length === 0) return Promise.resolve();
  let sessionId: string | undefined;
  let sessionFile: string | undefined;
  try {
    sessionId = ctx?.sessionManager?.getSessionId?.();
    sessionFile = ctx?.sessionManager?.getSessionFile?.();
  } catch {
    // An ended session manager: report without the ids (volee keys on VOLEE_AGENT).
  }
  const payload: Payload = {
    session_id: sessionId ?? null,
    session_file: sessionFile ?? null,
    cwd: ctx?.cwd ?? process.cwd(),
    hook_event_name: event,
    ...fields,
  };
  chain = chain.then(() => run(event, payload));
  return chain;
}

export default function (pi: any) {
  pi.on("session_start", (event: any, ctx: any) => {
    watchSignals();
    void report("session_start", ctx, { reason: event?.reason ?? "startup" });
  });
  pi.on("agent_start", (_event: any, ctx: any) => {
    void report("agent_start", ctx);
  });
  pi.on("tool_call", (event: any, ctx: any) => {
    void report("tool_call", ctx, {
      tool_name: event?.toolName ?? "tool",
      tool_input: event?.input ?? {},
      tool_use_id: event?.toolCallId ?? null,
    });
  });
  pi.on("tool_execution_end", (event: any, ctx: any) => {
    if (event?.isError) {
      void report("tool_error", ctx, {
        tool_name: event?.toolName ?? "tool",
        tool_use_id: event?.toolCallId ?? null,
      });
    }
  });
  pi.on("before_agent_start", () => {
    errorsInARow = 0; // a new prompt (pi's own retries do not pass here)
  });
  pi.on("agent_end", (event: any, ctx: any) => {
    const last = lastAssistant(event?.messages);
    if (last?.stopReason !== "error") {
      errorsInARow = 0;
      void report("agent_end", ctx);
      return;
    }
    errorsInARow += 1;
    void report("agent_end", ctx, {
      stop_reason: "error",
      error_message: typeof last.errorMessage === "string" ? last.errorMessage : "",
      errors_in_a_row: errorsInARow,
      max_retries: maxRetries(ctx?.cwd ?? process.cwd()),
    });
  });
  pi.on("session_shutdown", async (event: any, ctx: any) => {
    await report("session_shutdown", ctx, {
      reason: event?.reason ?? "quit",
      signal: signalled,
    });
  });
}
