//! A re-armable deadline for hand-written `poll` readers (the services' HTTP/1 server, HTTP/2
//! request and upstream bodies): armed when a read has to wait, disarmed when it makes
//! progress, and allocated only the first time a wait happens, so a connection whose reads
//! never wait carries no timer.
//!
//! Re-arming moves the registered timer in place (`Sleep::reset`) rather than registering a
//! new one per wait.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;

use tokio::time::{Instant, Sleep};

/// A deadline armed while a read waits (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Deadline {
    timer: Option<Pin<Box<Sleep>>>,
    /// The instant the timer is set to, while armed.
    armed: Option<Instant>,
}

impl Deadline {
    /// Arms the timer at `at` unless it is armed already (a later `at` does not move an armed
    /// deadline: call [`Deadline::disarm`] first), and polls it: true once it has passed, which
    /// also disarms it.
    pub(crate) fn expired(&mut self, cx: &mut Context<'_>, at: impl FnOnce() -> Instant) -> bool {
        if self.armed.is_none() {
            let at = at();
            match &mut self.timer {
                Some(timer) => timer.as_mut().reset(at),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
            }
            self.armed = Some(at);
        }
        let timer = self.timer.as_mut().expect("armed implies a timer");
        if timer.as_mut().poll(cx).is_ready() {
            self.armed = None;
            return true;
        }
        false
    }

    /// As [`Deadline::expired`] for a deadline that moves, mostly later (a keep-alive
    /// connection's idle deadline moves with every request): an armed timer set earlier than
    /// `at` is left as it is and moved on only when it fires early, so a busy connection moves
    /// its timer about once per timeout rather than once per request. An earlier `at` re-arms
    /// at once.
    pub(crate) fn expired_at(&mut self, cx: &mut Context<'_>, at: Instant) -> bool {
        if self.armed.is_some_and(|armed| armed > at) {
            self.armed = None;
        }
        loop {
            if !self.expired(cx, || at) {
                return false;
            }
            if Instant::now() >= at {
                return true;
            }
            // Fired at an earlier deadline: move on to the current one.
        }
    }

    /// The read made progress: the next wait arms afresh.
    pub(crate) fn disarm(&mut self) {
        self.armed = None;
    }
}
