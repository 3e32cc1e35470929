// The keyboard focus when a decided pause takes its focused button (Approve, Edit, Reject) with it.
// Its state: notebook/_widget.py, LiveView._header().

// The focus goes to the next pause's Approve, else the first run control that works, else the
// chosen tab: it stays in the view instead of falling to the page. Only while a decision is on
// its way does it watch the view's changes.
export function keepFocusOnDecisions(el) {
  let deciding = null;
  const settle = () => {
    const active = el.getRootNode().activeElement; // a shadow root's own where the view draws in one
    const on = active && el.contains(active) ? active.closest(".sn-decision") : null;
    if (on && on.dataset.pause === deciding) return; // the kernel has not answered yet
    deciding = null;
    watch.disconnect();
    if (active && active !== el.ownerDocument.body) return; // the person moved it: leave it
    const next =
      el.querySelector(".sn-decision .sn-approve") ||
      [...el.querySelectorAll(".sn-controls .sn-button")].find((button) => !button.disabled) ||
      el.querySelector('[role="tab"][tabindex="0"]');
    if (next) next.focus();
  };
  const watch = new MutationObserver(settle);
  el.addEventListener("click", (event) => {
    const button = event.target.closest(".sn-decision button");
    // a fork's view, drawn inside this one, keeps its own focus
    if (!button || button.closest(".sagents-view")?.parentElement !== el) return;
    deciding = button.closest(".sn-decision").dataset.pause;
    watch.observe(el, { childList: true, subtree: true });
  });
}
