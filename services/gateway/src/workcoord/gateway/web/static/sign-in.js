// The sign-in page. A link's fragment (``#c=…&lane=…&item=…``: which lane and decision it
// names) never reaches the server, so the ``next`` path the server put in the form and in the
// organization sign-in link lacks it: add it back here, so the person lands where the link
// pointed once signed in.

const hash = location.hash;
const next = document.querySelector('input[name="next"]');
if (hash.length > 1 && next && !next.value.includes("#")) {
  next.value += hash;
  const single = document.querySelector('a[href*="next="]');
  if (single) {
    const url = new URL(single.href);
    url.searchParams.set("next", next.value);
    single.href = `${url.pathname}${url.search}`;
  }
}
