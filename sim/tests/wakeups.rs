//! A receiver is woken once per message, when it arrives: datagrams, server-push stream items and
//! RPC answers each arm their arrival timer when sent, so the receiving task is not also woken
//! when the message is queued (which doubled the polls of every reader).

use sim::net::{stream, Datagrams, Endpoint};
use sim::runtime::{on_fresh_thread, simulate, SimConfig};
use sim::world::Host;
use sim::{NetSpec, NodeSpec, Proc, World};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// Two nodes, "a" (index 0) and "b" (1), 5 ms apart, no faults.
fn config() -> SimConfig {
    SimConfig {
        seed: 5,
        nodes: NodeSpec::exact_all(["a", "b"]),
        net: NetSpec::fixed(5_000),
        schedule: vec![],
        fault_window_ms: 10_000,
        liveness_ms: 1_000,
        keep_trace: false,
    }
}

/// Spawns `fut` as task `name` of `p`, counting its polls in `polls`.
fn spawn_counted(
    p: &Proc,
    name: &str,
    polls: Rc<Cell<u32>>,
    fut: impl Future<Output = ()> + 'static,
) {
    let mut fut = Box::pin(fut);
    p.spawn(
        name,
        std::future::poll_fn(move |cx| {
            polls.set(polls.get() + 1);
            fut.as_mut().poll(cx)
        }),
    );
}

/// What a test deploys: node "b" (1) runs the reader, spawned with [`spawn_counted`] on the
/// counter, logging the times (µs) at which it got something; node "a" (0) runs the writer.
type Deploy = fn(&World, Rc<Cell<u32>>, Rc<RefCell<Vec<u64>>>);

/// Runs `deploy`'s world; returns the reader's polls and its log.
fn run(deploy: Deploy) -> (u32, Vec<u64>) {
    on_fresh_thread(move || {
        let polls = Rc::new(Cell::new(0u32));
        let log: Rc<RefCell<Vec<u64>>> = Rc::default();
        let (n, l) = (polls.clone(), log.clone());
        simulate(
            config(),
            Box::new(sim::monitor::NullMonitor),
            move |world| deploy(world, n, l),
        );
        let out = (polls.get(), log.borrow().clone());
        out
    })
    .unwrap()
}

/// Sets the services of node `node`: a process `name` whose task `body(proc)` runs.
fn service<F: Future<Output = ()> + 'static>(
    world: &World,
    node: u16,
    body: impl Fn(Proc) -> F + 'static,
    counted: Option<Rc<Cell<u32>>>,
) {
    world.set_services(
        node,
        Rc::new(move |host: &Host| {
            let p = host.spawn_process("test");
            match &counted {
                Some(n) => spawn_counted(&p, "body", n.clone(), body(p.clone())),
                None => p.spawn("body", body(p.clone())),
            }
        }),
    );
}

/// Ten sends 100 ms apart, the first at 100 ms, arrive 5 ms later.
fn arrivals() -> Vec<u64> {
    (1..=10).map(|k| k * 100_000 + 5_000).collect()
}

#[test]
fn a_datagram_wakes_its_reader_once_when_it_arrives() {
    let (polls, got) = run(|world, n, log| {
        let inbox: Datagrams<u32> = Datagrams::new(1);
        let rx = inbox.clone();
        service(
            world,
            1,
            move |p| {
                let (rx, log) = (rx.clone(), log.clone());
                rx.open();
                async move {
                    loop {
                        rx.recv(&p).await;
                        log.borrow_mut().push(p.mono_us());
                    }
                }
            },
            Some(n),
        );
        service(
            world,
            0,
            move |p| {
                let tx = inbox.clone();
                async move {
                    for n in 0..10u32 {
                        p.sleep(Duration::from_millis(100)).await;
                        tx.send(&p, n);
                    }
                }
            },
            None,
        );
    });
    assert_eq!(got, arrivals());
    // The first poll, then one per arrival (not also one per send).
    assert_eq!(polls, 11);
}

#[test]
fn a_stream_item_wakes_its_reader_once_when_it_arrives() {
    let (polls, got) = run(|world, n, log| {
        let (tx, rx) = stream::<u32>(world, 0, 1);
        let rx = Rc::new(RefCell::new(Some(rx)));
        service(
            world,
            1,
            move |p| {
                let (mut rx, log) = (rx.borrow_mut().take().unwrap(), log.clone());
                async move {
                    loop {
                        rx.next().await;
                        log.borrow_mut().push(p.mono_us());
                    }
                }
            },
            Some(n),
        );
        let tx = Rc::new(RefCell::new(Some(tx)));
        service(
            world,
            0,
            move |p| {
                let tx = tx.borrow_mut().take().unwrap();
                async move {
                    for n in 0..10u32 {
                        p.sleep(Duration::from_millis(100)).await;
                        assert!(tx.send(n));
                    }
                    p.sleep(Duration::from_secs(5)).await;
                }
            },
            None,
        );
    });
    assert_eq!(got, arrivals());
    // The first poll, then one per arrival.
    assert_eq!(polls, 11);
}

#[test]
fn an_rpc_answer_wakes_its_caller_once_when_it_arrives() {
    // "b" calls a server on "a" ten times in a row; each call takes 5 ms there and 5 ms back.
    let (polls, got) = run(|world, n, log| {
        let ep: Endpoint<u32, u32> = Endpoint::new(0);
        let server = ep.clone();
        service(
            world,
            1,
            move |p| {
                let (ep, log) = (ep.clone(), log.clone());
                async move {
                    for n in 0..10u32 {
                        let r = p.call(&ep, n, Duration::from_secs(1)).await;
                        assert_eq!(r, Ok(n + 1));
                        log.borrow_mut().push(p.mono_us());
                    }
                }
            },
            Some(n),
        );
        service(
            world,
            0,
            move |_p| {
                use futures::StreamExt;
                let mut inbox = server.open();
                async move {
                    while let Some(call) = inbox.next().await {
                        call.reply.send(call.req + 1);
                    }
                }
            },
            None,
        );
    });
    assert_eq!(got, (1..=10).map(|k| k * 10_000).collect::<Vec<_>>());
    // The first poll, then per call: the request's arrival (it is handed to the server) and the
    // answer's (not also when the server sends it).
    assert_eq!(polls, 21);
}
