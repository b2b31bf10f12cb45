import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { compileExecAllow, ExecAllowError, loadExecAllowFile, type CommandTable } from "./allow.ts";
import { classifyCommand, SAFE_COMMANDS } from "./index.ts";

const roots = ["/var/log"];
const compile = (yaml: string): CommandTable => compileExecAllow(yaml, SAFE_COMMANDS, "test.yaml");
const problems = (yaml: string): string[] => {
  try {
    compile(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(ExecAllowError);
    return [...(err as ExecAllowError).problems];
  }
  throw new Error("the allowlist was accepted");
};
const classOf = (line: string, commands: CommandTable) => classifyCommand(line, { readRoots: roots, commands });

const NGINX = `
commands:
  nginx:
    description: test the configuration
    flags: tTqV
    options:
      -c: file
      -g: word
  sha256sum:
    flags: b
    long: [tag]
    operands: file
    max_operands: 4
  systemd-analyze:
    operands: name
    max_operands: 2
  journalctl:
    long: [no-tail]
    options:
      --namespace: name
  head:
    options:
      --max-lines: number
`;

describe("an exec allowlist file adds to what is safe", () => {
  const commands = compile(NGINX);

  it("makes added commands safe with exactly their declared options and operands", () => {
    expect(classOf("nginx -t", commands).class).toBe("safe");
    expect(classOf("nginx -t -q -g 'daemon off;'", commands).class).toBe("safe");
    expect(classOf("nginx -t -c /var/log/nginx/test.conf", commands).plan?.reads).toEqual(["/var/log/nginx/test.conf"]);
    expect(classOf("sha256sum -b /var/log/syslog /etc/os-release", commands).plan?.reads).toEqual(["/var/log/syslog", "/etc/os-release"]);
    expect(classOf("systemd-analyze blame", commands).class).toBe("safe");
    expect(classOf("sha256sum /var/log/a | sort | head -n 3", commands).class).toBe("safe");
  });

  it("leaves them not safe beyond the declaration: unknown options, abbreviations, operands, paths outside the read roots, secrets", () => {
    for (const line of [
      "nginx -s stop", // not declared
      "nginx -t extra", // no operands declared
      "nginx -c /etc/nginx/nginx.conf -t", // outside the read roots
      "nginx -c /etc/shadow -t",
      "sha256sum --ta /var/log/syslog", // an abbreviation of --tag
      "sha256sum /etc/shadow",
      "sha256sum /var/log/../../root/.ssh/id_rsa",
      "sha256sum /var/log/a /var/log/b /var/log/c /var/log/d /var/log/e", // more than max_operands
      "systemd-analyze /etc/x",
      "systemd-analyze -h", // no options declared
      "journalctl --namespace=../x",
      "head --max-lines=lots /var/log/syslog",
    ]) {
      expect(classOf(line, commands).class, line).toBe("mutating");
    }
    expect(classOf("sha256sum /etc/shadow", commands).reason).toMatch(/secret|shadow/);
  });

  it("adds options to built-in commands while the built-in checks still hold", () => {
    expect(classOf("journalctl -u nginx --no-tail --namespace=web -n 50 --no-pager", commands).class).toBe("safe");
    expect(classOf("head --max-lines 20 /var/log/syslog", commands).class).toBe("safe");
    // head's own rule (operands are read files inside the roots) still applies to an added option's line.
    expect(classOf("head --max-lines 20 /etc/shadow", commands).class).toBe("mutating");
    // journalctl's operands are still FIELD=value matches only.
    expect(classOf("journalctl --no-tail /var/log/x", commands).class).toBe("mutating");
  });

  it("never makes a dangerous line less than dangerous, nor lifts the syntax rule", () => {
    for (const line of ["nginx -t; rm -rf /", "sudo nginx -t", "nginx -t && shutdown -h now", "timeout 5 nginx -t", "env nginx -t"]) {
      expect(classOf(line, commands).class, line).toBe("dangerous");
    }
    for (const line of ["nginx -t > /tmp/x", "nginx -t && nginx -q", "nginx -c $HOME/x -t", "sha256sum /var/log/*"]) {
      expect(classOf(line, commands).class, line).toBe("mutating");
    }
  });

  it("changes nothing for a process that did not load it", () => {
    expect(classOf("nginx -t", SAFE_COMMANDS).class).toBe("mutating");
    expect(classOf("nginx -t", SAFE_COMMANDS).reason).toMatch(/not on the safe command list.*allow/);
  });
});

describe("an exec allowlist file is refused, naming the field and the rule", () => {
  it("refuses commands the gate treats as wrappers, shells, interpreters, destroyers or writers", () => {
    for (const name of ["sudo", "env", "timeout", "xargs", "sh", "bash", "python3", "perl", "mkfs", "fdisk", "rm", "mv", "dd", "tee", "kill", "curl", "wget", "kubectl", "docker", "git", "less", "sed", "tar", "iptables", "crontab", "reboot"]) {
      const p = problems(`commands:\n  ${name}:\n    flags: v\n`);
      expect(p.join("\n"), name).toMatch(new RegExp(`^commands\\.${name.replace(".", "\\.")}: .*(never makes it safe|dangerous)`));
    }
  });

  it("refuses every option a built-in command lists as never, and options the destroyer rules flag", () => {
    let checked = 0;
    for (const [name, spec] of Object.entries(SAFE_COMMANDS)) {
      if ("raw" in spec) continue;
      for (const option of spec.options.never ?? []) {
        const entry = option.startsWith("--") ? `    long: [${option.slice(2)}]` : `    flags: ${option[1]}`;
        const p = problems(`commands:\n  ${name}:\n${entry}\n`);
        expect(p.join("\n"), `${name} ${option}`).toMatch(/the gate never allows it|already on the allowlist|dangerous/);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(60);
    expect(problems("commands:\n  sort:\n    options:\n      -o: file\n")[0]).toMatch(/^commands\.sort\.options\.-o: sort -o writes/);
    expect(problems("commands:\n  find:\n    long: [exec]\n")[0]).toMatch(/^commands\.find/);
    expect(problems("commands:\n  sort:\n    long: [comp]\n")[0]).toMatch(/^commands\.sort\.long: sort would read --comp as an abbreviation of --compress-program/);
    expect(problems("commands:\n  journalctl:\n    options:\n      --vac: word\n")[0]).toMatch(/abbreviation of --vacuum-size/);
  });

  it("keeps a built-in command's operands and an own-grammar command closed", () => {
    expect(problems("commands:\n  cat:\n    operands: word\n")[0]).toMatch(/^commands\.cat\.operands: cat is built in/);
    expect(problems("commands:\n  ip:\n    flags: x\n")[0]).toMatch(/^commands\.ip: ip has a grammar of its own/);
    expect(problems("commands:\n  head:\n    flags: n\n")[0]).toMatch(/^commands\.head\.flags: head -n is already on the allowlist with a value/);
  });

  it("refuses malformed documents with the field and the rule", () => {
    expect(problems("commands: [nginx]\n")[0]).toMatch(/^commands: must be object/);
    expect(problems("commands:\n  nginx:\n    operands: files\n")[0]).toMatch(/^commands\.nginx\.operands: .*(file, path|one of).*\(rule: enum\)/);
    expect(problems("commands:\n  nginx:\n    option: {}\n")[0]).toMatch(/^commands\.nginx\.option: .*\(rule: additionalProperties\)/);
    expect(problems("commands:\n  /usr/sbin/nginx: {}\n")[0]).toMatch(/commands.*\(rule: (pattern|propertyNames)\)/);
    expect(problems("commands:\n  nginx:\n    options:\n      -config: file\n")[0]).toMatch(/\(rule: (pattern|propertyNames)\)/);
    expect(problems("commands:\n  nginx:\n    flags: 't;'\n")[0]).toMatch(/^commands\.nginx\.flags: .*\(rule: pattern\)/);
    expect(problems("cmds: {}\n").join("\n")).toMatch(/commands/);
    expect(problems("commands:\n  a: {}\n  a: {}\n")[0]).toMatch(/not valid YAML or JSON/);
    expect(problems("commands:\n  nginx:\n    flags: tt\n")[0]).toMatch(/-t is given twice/);
    expect(problems("commands:\n  nginx:\n    flags: c\n    options:\n      -c: file\n")[0]).toMatch(/-c is also given without a value/);
  });

  it("reports every problem of a file at once, and names the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "allow-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "exec-allow.yaml");
    writeFileSync(file, "commands:\n  rm: {}\n  sort:\n    long: [output]\n  nginx:\n    flags: t\n");
    try {
      loadExecAllowFile(file, SAFE_COMMANDS);
      throw new Error("accepted");
    } catch (err) {
      expect((err as Error).message).toContain(file);
      expect((err as ExecAllowError).problems).toHaveLength(2);
    }
    expect(() => loadExecAllowFile(join(dir, "missing.yaml"), SAFE_COMMANDS)).toThrow(/missing\.yaml: cannot read/);
  });
});

describe("never the reverse, for any allowlist", () => {
  const DANGEROUS = ["rm -rf /", "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda", "sudo cat /etc/shadow", "timeout 1 rm -rf /var", ":(){ :|:& };:", "echo x > /etc/passwd", "find / -delete", "tar --use-compress-program=sh -cf x /var/log", "kill -9 1", "systemctl reboot"];
  const SAFE = ["df -h", "ps aux", "journalctl -u nginx -n 50 --no-pager", "cat /var/log/syslog | grep -i error | tail -n 5"];
  const option = fc.oneof(fc.stringMatching(/^-[a-zA-Z]$/), fc.stringMatching(/^--[a-z][a-z-]{0,10}$/));
  const kind = fc.constantFrom("file", "path", "name", "number", "word");
  const command = fc.oneof(fc.constantFrom(...Object.keys(SAFE_COMMANDS), "rm", "sudo", "dd", "find", "tar", "kill", "systemctl", "mkfs.ext4"), fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/));

  it("a dangerous line stays dangerous and an accepted file never changes the built-ins' safe lines", () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.dictionary(command, fc.record({ options: fc.dictionary(option, kind, { maxKeys: 4 }) }, { requiredKeys: [] }), { maxKeys: 4 }), (commands) => {
        let table: CommandTable;
        try {
          table = compileExecAllow(JSON.stringify({ commands }), SAFE_COMMANDS);
        } catch (err) {
          if (err instanceof ExecAllowError) return;
          throw err;
        }
        accepted++;
        for (const line of DANGEROUS) expect(classOf(line, table).class, line).toBe("dangerous");
        for (const line of SAFE) expect(classOf(line, table).class, line).toBe("safe");
      }),
      { numRuns: 300 },
    );
    // The property is about accepted files: most generated ones must be.
    expect(accepted).toBeGreaterThan(100);
  });
});
