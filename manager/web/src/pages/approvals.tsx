/** /approvals — to be written. */
export function ApprovalsPage() {
  return <h1>Approvals</h1>;
}
