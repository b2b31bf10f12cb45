/**
 * Pieces the admin pages share: a secret shown once (a new API or edge token), a confirmation
 * step before an action that cannot be undone, and the "key=value, key=value" label text.
 */
import { useRef, useState, type ReactNode } from "react";
import { ConnectError } from "@connectrpc/connect";
import { ErrorNote } from "./components.tsx";

/** A token the manager returned once: shown with a copy button and the warning that it will not be shown again. */
export function ShownOnce(props: { title: string; secret: string; children?: ReactNode; onDismiss(): void }) {
  const [copied, setCopied] = useState<"" | "yes" | "no">("");
  const box = useRef<HTMLTextAreaElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.secret);
      setCopied("yes");
    } catch {
      // No clipboard (plain http on a non-local address, or refused): select it for Ctrl+C.
      box.current?.select();
      setCopied("no");
    }
  };
  return (
    <section className="shown-once" role="region" aria-label={props.title} data-testid="shown-once">
      <h3>{props.title}</h3>
      <p className="warn-text">
        <strong>Copy it now: you will not see it again.</strong> The manager keeps only its hash; if it is lost, issue a new one.
      </p>
      <textarea ref={box} className="secret mono" readOnly rows={2} value={props.secret} aria-label="The new token" data-testid="secret" onFocus={(e) => e.currentTarget.select()} />
      <p className="row">
        <button type="button" onClick={copy}>
          Copy
        </button>
        <span role="status" className="muted">
          {copied === "yes" ? "Copied to the clipboard." : copied === "no" ? "The browser refused the clipboard: the token is selected, press Ctrl+C (⌘C)." : ""}
        </span>
      </p>
      {props.children}
      <p>
        <button type="button" className="secondary" onClick={props.onDismiss}>
          I have copied it — hide it
        </button>
      </p>
    </section>
  );
}

/**
 * A button that asks first: the first click shows what will happen with Confirm and Cancel;
 * only Confirm runs the action.
 */
export function ConfirmButton(props: { label: string; question: ReactNode; confirmLabel?: string; disabled?: boolean; onConfirm(): Promise<void> | void }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!asking)
    return (
      <button type="button" className="secondary danger-text" disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  const confirm = async () => {
    setBusy(true);
    try {
      await props.onConfirm();
    } finally {
      setBusy(false);
      setAsking(false);
    }
  };
  return (
    <span className="confirm-inline" role="group" aria-label={`Confirm: ${props.label}`}>
      <span>{props.question}</span>{" "}
      <button type="button" className="danger" disabled={busy} onClick={confirm}>
        {props.confirmLabel ?? "Confirm"}
      </button>{" "}
      <button type="button" className="secondary" disabled={busy} onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** An error: the manager's refusal says so (with its message, which names the field and rule); a form's own check is shown as is. */
export function RefusedNote(props: { error: unknown; what?: string }) {
  return <ErrorNote error={props.error}>{props.error instanceof ConnectError ? `The manager refused${props.what ? ` ${props.what}` : ""}: ` : ""}</ErrorNote>;
}
