/** The error a promise rejects with (OngridError in process, ConnectError over RPC); fails the test when it resolves or rejects with anything else. */
import { expect } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import { OngridError } from "../../skill/errors.ts";

export async function rejection(p: Promise<unknown>): Promise<OngridError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OngridError);
    return err as OngridError;
  }
  throw new Error("expected a rejection");
}

/** The ConnectError an RPC rejects with; fails the test when it resolves or rejects with anything else. */
export async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  const err = await p.then(
    () => {
      throw new Error("expected a refusal");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}
