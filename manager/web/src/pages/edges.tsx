/** /edges — to be written. */
export function EdgesPage() {
  return <h1>Edges</h1>;
}
