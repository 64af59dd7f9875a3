//! The cloud's rules, tested on its state without a world.

use super::*;
use proptest::prelude::*;

/// A cloud's state with `instances` instances of two interfaces of `capacity`, in a subnet of
/// `size` picked under `seed`.
fn state(seed: u64, size: u32, capacity: u32, instances: &[&str]) -> State {
    let cfg = CloudConfig {
        capacity,
        subnet_size: size,
        internal_errors_per_mille: 0,
    };
    let mut s = State::new(cfg, Subnet::of_run(seed, size));
    for i in instances {
        s.add_instance(i, 2);
    }
    s
}

/// An instance's interfaces.
fn describe(s: &State, instance: &str) -> Rc<Interfaces> {
    s.instances.get(instance).cloned().unwrap_or_default()
}

/// Which interface holds `ip`, over every instance.
fn holders(s: &State, ip: &Short) -> Vec<(String, Short)> {
    let mut out = Vec::new();
    for (inst, ifs) in &s.instances {
        for (eni, ips) in ifs.iter() {
            if ips.contains(ip) {
                out.push((inst.clone(), *eni));
            }
        }
    }
    out
}

#[test]
fn a_fence_admits_equal_and_higher_tokens_and_refuses_lower_ones() {
    let mut s = state(1, 10, 4, &[]);
    let f = |lock: &str, token| Fence {
        lock: lock.into(),
        token,
    };
    assert_eq!(s.admit_fence(&f("l", 3)), Ok(()));
    assert_eq!(s.admit_fence(&f("l", 3)), Ok(()), "an equal token");
    assert_eq!(s.admit_fence(&f("l", 2)), Err(3), "a lower token");
    // A refused token records nothing; a higher one raises the bar.
    assert_eq!(s.admit_fence(&f("l", 5)), Ok(()));
    assert_eq!(s.admit_fence(&f("l", 4)), Err(5));
    // Locks are independent.
    assert_eq!(s.admit_fence(&f("m", 0)), Ok(()));
    assert_eq!(s.fences.get("l"), Some(&5));
}

#[test]
fn addresses_are_dotted_and_skip_the_reserved_ones() {
    assert_eq!(subnet_address(0).as_str(), "10.0.0.4");
    assert_eq!(subnet_address(250).as_str(), "10.0.0.254");
    assert_eq!(subnet_address(252).as_str(), "10.0.1.0");
    assert_eq!(subnet_address(MAX_SUBNET_SIZE - 1).as_str(), "10.0.255.254");
}

#[test]
fn picks_are_the_seeds_and_span_the_subnet() {
    let picks = |seed| Subnet::of_run(seed, 200).take(20).unwrap();
    assert_eq!(picks(9), picks(9), "same seed, same addresses");
    assert_ne!(picks(9), picks(10), "another seed, other addresses");
    // Not handed out in address order: picked at random.
    let p = picks(9);
    let mut sorted = p.clone();
    sorted.sort();
    assert_ne!(p, sorted);
}

#[test]
fn a_released_address_comes_back_to_another_instance_and_to_the_same_one() {
    // A subnet of 4: every release is one of few free addresses, so it is soon reissued.
    let mut s = state(3, 4, 4, &["a", "b"]);
    let eni = eni_name(0);
    let mut to_other = false;
    let mut to_same = false;
    for round in 0..40 {
        let taken = s.assign("a", &eni, 1).unwrap()[0];
        s.unassign("a", &eni, &[taken]).unwrap();
        assert!(s.subnet.is_free(&taken));
        let who = if round % 2 == 0 { "a" } else { "b" };
        let got = s.assign(who, &eni, 4).unwrap();
        if got.contains(&taken) {
            to_same |= who == "a";
            to_other |= who == "b";
        }
        s.unassign(who, &eni, &got).unwrap();
    }
    assert!(to_other, "a released address went to another instance");
    assert!(
        to_same,
        "a released address came back to the same interface"
    );
}

#[test]
fn subnet_exhausted_assign_is_refused_whole_and_changes_nothing() {
    let mut s = state(1, 3, 10, &["a", "b"]);
    let eni = eni_name(0);
    let got = s.assign("a", &eni, 2).unwrap();
    assert_eq!(got.len(), 2);
    let err = s.assign("b", &eni, 2).unwrap_err();
    assert_eq!(err, CloudError::SubnetFull { free: 1, wanted: 2 });
    assert!(describe(&s, "b")[&eni].is_empty());
    assert_eq!(s.subnet.free_count(), 1);
    s.assign("b", &eni, 1).unwrap();
    assert_eq!(
        s.assign("b", &eni_name(1), 1),
        Err(CloudError::SubnetFull { free: 0, wanted: 1 })
    );
    // Releasing makes room again.
    s.unassign("a", &eni, &got[..1]).unwrap();
    assert_eq!(s.assign("b", &eni_name(1), 1).unwrap(), got[..1].to_vec());
}

#[test]
fn an_interface_takes_what_it_has_room_for() {
    let mut s = state(1, 50, 3, &["a"]);
    let eni = eni_name(1);
    assert_eq!(s.assign("a", &eni, 5).unwrap().len(), 3);
    assert_eq!(s.assign("a", &eni, 1), Err(CloudError::InterfaceFull));
    assert_eq!(s.subnet.free_count(), 47);
}

#[derive(Clone, Debug)]
enum Op {
    Assign { inst: usize, eni: u32, count: u32 },
    Unassign { inst: usize, eni: u32, pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, 0..2u32, 0..4u32).prop_map(|(inst, eni, count)| Op::Assign {
            inst,
            eni,
            count
        }),
        (0..3usize, 0..2u32, 0..8usize).prop_map(|(inst, eni, pick)| Op::Unassign {
            inst,
            eni,
            pick
        }),
    ]
}

proptest! {
    /// Whatever the order of assigns and unassigns, no address is ever on two interfaces at
    /// once, and every address of the subnet is either free or on exactly one interface.
    #[test]
    fn no_address_is_ever_on_two_interfaces(seed in any::<u64>(), ops in prop::collection::vec(op(), 1..120)) {
        const SIZE: u32 = 10;
        let names = ["a", "b", "c"];
        let mut s = state(seed, SIZE, 3, &names);
        for op in ops {
            match op {
                Op::Assign { inst, eni, count } => {
                    let _ = s.assign(names[inst], &eni_name(eni), count);
                }
                Op::Unassign { inst, eni, pick } => {
                    let eni = eni_name(eni);
                    let held: Vec<Short> = describe(&s, names[inst])[&eni].iter().copied().collect();
                    if !held.is_empty() {
                        s.unassign(names[inst], &eni, &[held[pick % held.len()]]).unwrap();
                    }
                }
            }
            for i in 0..SIZE {
                let ip = subnet_address(i);
                let on = holders(&s, &ip).len();
                let free = usize::from(s.subnet.is_free(&ip));
                prop_assert_eq!(on + free, 1, "{} is on {} interfaces, free: {}", ip, on, free);
            }
        }
    }
}
