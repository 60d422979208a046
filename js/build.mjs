// Bundles the widgets' ES modules (luisa_nb/widgets/static/src) into one self-contained
// module per widget, the one anywidget loads as a widget's _esm and the static page
// inlines: luisa_nb/widgets/static/bundles/<name>.js. The bundles are committed; a test
// rebuilds them into a temporary folder and compares.
//
//   node js/build.mjs [out folder]    (default: luisa_nb/widgets/static/bundles)

import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const STATIC = `${ROOT}luisa_nb/widgets/static/`;

// Bundle name -> its entry module under static/src.
export const ENTRIES = {
  page: "page.js",
  timeline: "timeline/timeline.js",
  table: "table.js",
  hazards: "hazards.js",
  diff: "diff.js",
  contents: "contents.js",
};

const outdir = process.argv[2] || `${STATIC}bundles`;

await esbuild.build({
  entryPoints: Object.entries(ENTRIES).map(([out, entry]) => ({ out, in: `${STATIC}src/${entry}` })),
  outdir,
  absWorkingDir: ROOT, // the bundles name their source files relative to the repository
  bundle: true,
  format: "esm",
  charset: "utf8",
  legalComments: "none",
  banner: { js: "// Generated from luisa_nb/widgets/static/src by js/build.mjs (esbuild); do not edit." },
  logLevel: "warning",
});
