/** /chat — to be written. */
export function ChatPage() {
  return <h1>Chat</h1>;
}
