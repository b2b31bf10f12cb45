/** The OngridError a promise rejects with; fails the test when it resolves or rejects with anything else. */
import { expect } from "vitest";
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
