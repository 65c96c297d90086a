// Enhancements of the server-rendered pages; every page works without this script.
// Each feature looks for its elements and does nothing when the page has none.
(() => {
  // Copy buttons: <button data-copy="#element-id"> copies that element's value or text.
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const source = document.querySelector(button.dataset.copy);
      if (!source) return;
      const text = 'value' in source ? source.value : source.textContent;
      const done = button.dataset.copied || '✓';
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        // Without the clipboard API (plain http on another host): select it so that Ctrl-C works.
        if ('select' in source) source.select();
        return;
      }
      const before = button.textContent;
      button.textContent = done;
      setTimeout(() => {
        button.textContent = before;
      }, 1500);
    });
  }
})();
