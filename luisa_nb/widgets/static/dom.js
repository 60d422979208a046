// Shared by the table and diff renderers (prepended, as columns.js is): a DOM element
// with an optional class and text.

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
