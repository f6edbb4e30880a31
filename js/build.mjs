// Bundle the widget front end into ahp_lab/widgets/static/ (committed, so pip users need no npm).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

const outdir = "../ahp_lab/widgets/static";
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
