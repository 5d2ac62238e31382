use super::*;

/// Every item's text and offset, or the error.
fn items(input: &str, limit: usize) -> Result<Vec<(String, u64)>, FrameError> {
    let mut found = Vec::new();
    for_each_item(input.as_bytes(), limit, |f: Frame<'_>| {
        found.push((String::from_utf8_lossy(f.bytes).into_owned(), f.offset));
        Ok::<(), FrameError>(())
    })?;
    Ok(found)
}

#[test]
fn a_list_yields_its_items_and_nothing_else() {
    let list = r#"{"apiVersion":"v1","items":[ {"a":"]}"} , {"b":[1,{"c":"\""}]},"s",7 ],"kind":"List","metadata":{"x":[]}}"#;
    let found = items(list, 1 << 20).expect("a list");
    let texts: Vec<&str> = found.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts,
        [r#"{"a":"]}"}"#, r#"{"b":[1,{"c":"\""}]}"#, r#""s""#, "7"]
    );
    assert_eq!(found[0].1, list.find(r#"{"a""#).expect("item") as u64);
}

#[test]
fn an_array_yields_its_elements_and_an_object_without_items_itself() {
    let found = items("\u{feff} \n[{\"x\":1},\n{\"y\":2}]\n", 1 << 20).expect("an array");
    assert_eq!(found.len(), 2);
    let one = r#"{"kind":"Event","message":"m","nested":{"items":[1]}}"#;
    let found = items(one, 1 << 20).expect("an object");
    assert_eq!(found, [(one.to_string(), 0)]);
    assert_eq!(items("[]", 10).expect("empty").len(), 0);
    assert_eq!(items(r#"{"items":null}"#, 10).expect("no items").len(), 0);
}

#[test]
fn truncated_json_names_where_it_ends() {
    let list = "{\"items\":[\n{\"message\":\"a\"},\n{\"message\":\"b";
    match items(list, 1 << 20) {
        Err(FrameError::Truncated { offset, first_line }) => {
            assert_eq!(offset, list.len() as u64);
            assert!(!first_line);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_json_names_its_byte() {
    let list = "{\"items\":[\n{\"a\":1},,{\"b\":2}]}";
    match items(list, 1 << 20) {
        Err(FrameError::Malformed { offset, .. }) => assert_eq!(offset, 19),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        items("{\"items\":[1}", 100),
        Err(FrameError::Malformed { offset: 11, .. })
    ));
    assert!(matches!(
        items("{\"a\":1,}", 100),
        Err(FrameError::Malformed { offset: 7, .. })
    ));
}

#[test]
fn more_after_the_document_is_text() {
    let lines = "{\"level\":\"error\"}\n{\"level\":\"info\"}\n";
    assert!(matches!(
        items(lines, 100),
        Err(FrameError::Trailing { offset: 18 })
    ));
}

#[test]
fn an_item_over_the_limit_is_refused_not_held() {
    let big = format!(
        "{{\"items\":[{{\"a\":1}},{{\"m\":\"{}\"}}]}}",
        "x".repeat(5000)
    );
    match items(&big, 1000) {
        Err(FrameError::TooLarge { offset, limit }) => {
            assert_eq!((offset, limit), (18, 1000));
        }
        other => panic!("{other:?}"),
    }
    // A single object is one item, and the limit holds for it too.
    let one = format!("{{\"m\":\"{}\"}}", "x".repeat(5000));
    assert!(matches!(
        items(&one, 1000),
        Err(FrameError::TooLarge { offset: 0, .. })
    ));
    // Deep nesting outside any item does not grow without end either.
    let deep = format!("{{\"metadata\":{}", "[".repeat(5000));
    assert!(matches!(
        items(&deep, 1 << 20),
        Err(FrameError::Malformed { .. })
    ));
}

#[test]
fn items_across_read_chunks_arrive_whole() {
    let mut list = String::from("{\"kind\":\"List\",\"items\":[");
    for i in 0..20_000 {
        if i > 0 {
            list.push(',');
        }
        list.push_str(&format!("{{\"n\":{i},\"pad\":\"{}\"}}", "y".repeat(i % 97)));
    }
    list.push_str("]}");
    let found = items(&list, 4096).expect("a long list");
    assert_eq!(found.len(), 20_000);
    for (i, (text, offset)) in found.iter().enumerate() {
        let value: serde_json::Value = serde_json::from_str(text).expect("whole item");
        assert_eq!(value["n"], i);
        assert_eq!(&list[*offset as usize..][..text.len()], text);
    }
}

#[test]
fn reads_cut_anywhere_give_the_same_items() {
    // Escapes, brackets and quotes inside strings, multi-byte characters, CRLF: every cut
    // of a read falls inside one of them at some step.
    let list = "\u{feff}{\r\n\"kind\": \"List\",\r\n\"metadata\": {\"x\": \"[{\\\"\"},\r\n\"items\": [\r\n{\"m\": \"é]}\\\\\", \"n\": [1, {\"o\": \"\\\"}\"}]},\r\n\"日本\",\r\n{\"p\": \"\\u00e9\\\\\"}\r\n]\r\n}\r\n";
    let whole = items(list, 1 << 20).expect("a list");
    assert_eq!(whole.len(), 3);
    for step in 1..=9 {
        let mut found = Vec::new();
        for_each_item(
            crate::failure_text::input::tests::Trickle::new(list.as_bytes(), step),
            1 << 20,
            |f: Frame<'_>| {
                found.push((String::from_utf8_lossy(f.bytes).into_owned(), f.offset));
                Ok::<(), FrameError>(())
            },
        )
        .expect("a list");
        assert_eq!(found, whole, "step {step}");
    }
    for (text, _) in &whole {
        serde_json::from_str::<serde_json::Value>(text).expect("each item is JSON");
    }
}
