// Bundle the widget front end into ahp_lab/widgets/static/ (committed, so pip users need no npm).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

// `node build.mjs --outdir DIR` writes the same bundle elsewhere (tests/widgets/test_bundle.py
// rebuilds into a temporary folder and compares bytes with the committed one).
const at = process.argv.indexOf("--outdir");
const outdir = at >= 0 && process.argv[at + 1] ? process.argv[at + 1] : "../ahp_lab/widgets/static";
mkdirSync(outdir, { recursive: true });
const options = {
  entryPoints: { widgets: "src/index.js" },
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: true,
  legalComments: "eof",
  outdir,
  logLevel: "info",
};
if (process.argv.includes("--watch")) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
copyFileSync("src/widgets.css", `${outdir}/widgets.css`);
