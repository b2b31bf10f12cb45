/** /playbooks — to be written. */
export function PlaybooksPage() {
  return <h1>Playbooks</h1>;
}
