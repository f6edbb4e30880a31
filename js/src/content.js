// Tool-result content items (text, resources, file edits, terminals, sub-agents).
import { fmtSize, h, textBlock } from "./util.js";

export function contentList(items, model) {
  return h("div", { class: "ahp-content" }, (items || []).map((it) => {
    switch (it.type) {
      case "text":
        return textBlock(it.block, model);
      case "embeddedResource":
        return h("div", { class: "ahp-dim" }, `embedded ${it.contentType || "data"} (${fmtSize(it.bytes)})`);
      case "resource":
        return h("div", { class: "ahp-mono" }, `resource ${it.uri}${it.contentType ? ` (${it.contentType})` : ""}`);
      case "fileEdit":
        return h("div", { class: "ahp-mono" },
          `edit ${it.before && it.after && it.before !== it.after ? `${it.before} → ${it.after}` : it.after || it.before}`,
          it.added != null || it.removed != null ? ` (+${it.added ?? 0} −${it.removed ?? 0})` : "");
      case "terminal":
        return h("div", { class: "ahp-terminal" },
          h("div", { class: "ahp-mono" }, `terminal: ${it.title || "terminal"} ${it.exitCode != null ? `(exit ${it.exitCode})` : ""}`),
          it.preview ? textBlock(it.preview, model) : null);
      case "subagent":
        return h("div", { class: "ahp-mono" }, `sub-agent ${it.agentName || ""} ${it.title || ""} (${it.resource})`);
      case "more":
        return h("div", { class: "ahp-dim" }, `${it.count} more items not shown`);
      default:
        return h("div", { class: "ahp-dim" }, `(unsupported content type ${it.rawType})`);
    }
  }));
}
