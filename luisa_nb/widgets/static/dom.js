// Shared by the timeline, table and diff renderers (prepended, as columns.js is): a DOM
// element with an optional class and text. Names always enter the page as text, so that
// no name can add markup.

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
