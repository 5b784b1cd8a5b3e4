// tests/clients/java/.../Check.java: assertion helpers for the checks: each
// failure throws with the expected and actual values, so a failed check says
// what it saw. Stateless, thread-safe.
package io.ciuic.kafka.it;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

final class Check {
  private Check() {}

  static final class Failure extends RuntimeException {
    Failure(String m) { super(m); }
  }

  static void that(boolean cond, String what) {
    if (!cond) throw new Failure(what);
  }

  static void eq(Object want, Object got, String what) {
    if (!Objects.equals(want, got)) throw new Failure(what + ": want " + want + ", got " + got);
  }

  /** Polls pred every 50 ms until it holds or timeout passes. */
  static void eventually(Duration timeout, String what, BooleanSupplier pred) {
    long end = System.nanoTime() + timeout.toNanos();
    while (!pred.getAsBoolean()) {
      if (System.nanoTime() > end) throw new Failure("timed out after " + timeout + " waiting for " + what);
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Failure("interrupted waiting for " + what);
      }
    }
  }
}
