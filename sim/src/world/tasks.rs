//! Named tasks: spawning a process's tasks on its node, holding a stalled task back, and the task
//! faults (a silent death, a stall).

use super::World;
use crate::event::{Event, NodeIx};
use crate::sync::Local;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// A named task of a process: how to drop it, and its stall (see `Stallable`).
pub(crate) struct TaskSlot {
    pub(super) abort: madsim::task::AbortHandle,
    /// True time (µs) until which the task is not polled; 0: not stalled.
    stall_until_us: Rc<Cell<u64>>,
    /// The task's waker while it is held back by a stall (ending the stall early wakes it).
    stall_waker: Rc<RefCell<Option<std::task::Waker>>>,
}

impl World {
    /// Spawns task `name` of process `pid` on the node's madsim node, wrapped so that a stall can
    /// hold it back; it is dropped at once if the process has ended.
    pub(super) fn spawn_task(
        &self,
        node: NodeIx,
        pid: u32,
        name: &str,
        fut: Pin<Box<dyn Future<Output = ()>>>,
    ) {
        let stall = Rc::new(Cell::new(0u64));
        let stall_id = stall.clone();
        let stall_waker: Rc<RefCell<Option<std::task::Waker>>> = Rc::default();
        let world = self.clone();
        let task_name = name.to_string();
        let wrapped = Stallable {
            world: self.clone(),
            until_us: stall.clone(),
            waker: stall_waker.clone(),
            sleep: None,
            inner: fut,
        };
        let body = async move {
            wrapped.await;
            // Finished normally: forget the slot so that later faults do not target it, unless a
            // newer task of the same name holds it now (a loop that spawned a successor while
            // this one was still winding down).
            let removed = {
                let mut nodes = world.0.nodes.borrow_mut();
                match nodes[node as usize].procs.get_mut(&pid) {
                    Some(p) if p.alive => {
                        let own = p
                            .tasks
                            .get(&task_name)
                            .is_some_and(|slot| Rc::ptr_eq(&slot.stall_until_us, &stall_id));
                        own && p.tasks.remove(&task_name).is_some()
                    }
                    _ => false,
                }
            };
            if removed {
                world.emit(
                    node,
                    Event::TaskEnd {
                        pid,
                        task: task_name,
                    },
                );
            }
        };
        let msim = self.0.nodes.borrow()[node as usize].msim;
        let spawner = self.0.handle.get_node(msim).expect("node exists");
        let jh = spawner.spawn(Local::new(body));
        let mut nodes = self.0.nodes.borrow_mut();
        if let Some(p) = nodes[node as usize].procs.get_mut(&pid) {
            if p.alive {
                p.tasks.insert(
                    name.to_string(),
                    TaskSlot {
                        abort: jh.abort_handle(),
                        stall_until_us: stall,
                        stall_waker,
                    },
                );
                return;
            }
        }
        jh.abort();
    }

    /// A `TaskDeath` fault: the named task of the newest live process running one is dropped at
    /// once.
    pub(super) fn kill_task(&self, node: NodeIx, task: &str) {
        if let Some(pid) = self.find_process(node, |p| p.tasks.contains_key(task)) {
            let slot = self.0.nodes.borrow_mut()[node as usize]
                .procs
                .get_mut(&pid)
                .unwrap()
                .tasks
                .remove(task);
            if let Some(slot) = slot {
                slot.abort.abort();
                self.emit(
                    node,
                    Event::TaskDeath {
                        pid,
                        task: task.to_string(),
                    },
                );
            }
        }
    }

    /// Starts a `TaskStall` fault lasting `dur_ms` from `now`: the named task of the newest live
    /// process running one is not polled until then.
    pub(super) fn stall_task(&self, node: NodeIx, task: &str, now: u64, dur_ms: u64) {
        if let Some(pid) = self.find_process(node, |p| p.tasks.contains_key(task)) {
            let until = now + dur_ms * 1000;
            let nodes = self.0.nodes.borrow();
            nodes[node as usize].procs[&pid].tasks[task]
                .stall_until_us
                .set(until);
            drop(nodes);
            self.emit(
                node,
                Event::TaskStall {
                    pid,
                    task: task.to_string(),
                    until_ms: until / 1000,
                },
            );
        }
    }

    /// Ends a `TaskStall` fault: every task of that name on the node runs again from `now`.
    pub(super) fn end_stall(&self, node: NodeIx, task: &str, now: u64) {
        let nodes = self.0.nodes.borrow();
        for p in nodes[node as usize].procs.values() {
            if let Some(slot) = p.tasks.get(task) {
                slot.stall_until_us.set(slot.stall_until_us.get().min(now));
                if let Some(w) = slot.stall_waker.borrow_mut().take() {
                    w.wake();
                }
            }
        }
    }
}

/// A task wrapper that withholds polls while the task is stalled.
struct Stallable {
    world: World,
    until_us: Rc<Cell<u64>>,
    waker: Rc<RefCell<Option<std::task::Waker>>>,
    sleep: Option<crate::time::Sleep>,
    inner: Pin<Box<dyn Future<Output = ()>>>,
}

impl Future for Stallable {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let until = self.until_us.get();
        // Zero: not stalled (the common case, decided without reading the clock).
        if until != 0 && until > self.world.now_us() {
            let at = self.world.instant_at(until);
            let sleep = self
                .sleep
                .get_or_insert_with(|| crate::time::sleep_until(at));
            sleep.reset(at);
            if Pin::new(sleep).poll(cx).is_pending() {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        if until != 0 {
            // The stall is over (or was cut short).
            self.until_us.set(0);
            self.sleep = None;
        }
        self.inner.as_mut().poll(cx)
    }
}
