// A DOM element with an optional class and text. Names always enter the page as text,
// so that no name can add markup.

export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
